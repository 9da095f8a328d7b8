"""`bgbench analyze <analysis>`: analyses of stored runs, one subcommand per registered measure of
command 'analyze' (`measures.analysis.AnalysisMeasure`), in the measures' declared order.

Nothing here is written per analysis: what it reads (`Reads`) gives its input arguments, its
config's fields that declare a flag (`options.flag`) give its options, and every analysis runs
the same way: build the config (its checks run), open the store, call `bgbench.analyze` with its
name, the input and the config's fields, print the result (heavy imports inside `run`).
"""
from __future__ import annotations

import argparse
import dataclasses

from ..measures.analysis import AnalysisMeasure, Reads
from ..measures.registry import list_measures
from .arguments import add_config_flags, add_output_args, add_stored_run_args, stored_mapping
from .output import emit, open_store


def register(sub) -> None:
    p = sub.add_parser("analyze", help="analyses of stored runs (no new inference)")
    group = p.add_subparsers(dest="analysis", required=True, metavar="ANALYSIS")
    for measure in list_measures("analyze"):
        add_analysis(group, measure)


def add_analysis(group, measure: AnalysisMeasure) -> None:
    """The subcommand of one analysis: its input's arguments, then its config's flags, then the output
    flags and --db (an analysis of one run has them with its input: RUN, --mapping, --json ...)."""
    p = group.add_parser(measure.name, help=measure.help.replace("%", "%%"))
    if measure.reads is Reads.RUN:
        add_stored_run_args(p)
    elif measure.reads is Reads.RUNS:
        p.add_argument("runs", nargs="+", type=int, metavar="RUN", help="ids of stored eval runs (see `bgbench runs`)")
    add_config_flags(p, measure.config)
    if measure.reads is not Reads.RUN:
        add_output_args(p)
    p.set_defaults(measure=measure)


def run(args: argparse.Namespace) -> int:
    from ..api import analyze
    from ..console import status
    measure: AnalysisMeasure = args.measure
    cfg = measure.config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(measure.config)})
    options = measure.options(cfg)
    with open_store(args, create=False) as store:
        if measure.reads is Reads.RUN:
            result = analyze(measure.name, store, args.run, **options, mapping=stored_mapping(store, args))
        elif measure.reads is Reads.RUNS:
            results = [analyze(measure.name, store, ids, **options) for ids in measure.per_model(store, args.runs)]
        else:
            result = analyze(measure.name, store, **options)
    if measure.reads is Reads.RUNS:
        return emit(args, {"models": [measure.document(r) for r in results]},
                    "\n\n".join(measure.text(r) for r in results))
    for line in measure.notes(result, getattr(args, "run", None)):
        status(line)
    return emit(args, measure.document(result), measure.text(result))
