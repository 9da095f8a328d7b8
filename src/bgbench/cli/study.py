"""`bgbench study STUDY.toml`: every (model, dataset, measure) step of a study file that the results
store does not hold yet, then the report; `--dry-run` prints the plan."""
from __future__ import annotations

import argparse

from .arguments import add_db_arg, add_device_arg, add_output_args
from .output import emit


def register(sub) -> None:
    p = sub.add_parser("study", help="run a study file (models x datasets x measures), resumably, and write its "
                                     "report; rerunning it runs only what the store lacks")
    p.add_argument("file", metavar="STUDY.toml", help="the study: models, datasets, [measures.NAME] tables of options")
    p.add_argument("--out", help="the report's folder (default: the study's [report] out, else STUDY-report/ beside "
                                 "the file)")
    add_study_args(p)
    p.set_defaults(func=run)


def add_study_args(p) -> None:
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (each step, whether the store holds it, its cost in forwards) and run nothing")
    add_device_arg(p)
    add_output_args(p)
    add_db_arg(p)


def run(args: argparse.Namespace) -> int:
    from ..studies import load_study
    return run_spec(args, load_study(args.file, out=args.out))


def run_spec(args: argparse.Namespace, spec) -> int:
    from ..studies.runner import plan_table, run_study
    result = run_study(spec, args.db, dry_run=args.dry_run, device=args.device, progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0
        return 0
    emit(args, result.to_dict(), plan_table(result.steps) if args.dry_run else result.text())
    return 0
