"""`bgbench analyze edits RUN...`: ImageNet-E's accuracy drop from original per attribute level."""
from __future__ import annotations

import argparse

from ..api import edit_drops
from .arguments import add_db_arg, add_output_args, add_runs_arg, add_seed_arg, param_default
from .folders import open_store
from .output import emit


def register(sub, measure) -> None:
    p = sub.add_parser("edits", help=measure.help.replace("%", "%%"))
    add_runs_arg(p, "eval")
    add_seed_arg(p, param_default(edit_drops, "seed"), "seed of the paired bootstrap")
    p.add_argument("--bootstrap", type=int, default=param_default(edit_drops, "n_boot"),
                   help="bootstrap resamples (default %(default)s)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import checks
    checks.at_least("--bootstrap", args.bootstrap, 100)
    from ..measures.edits.summary import runs_by_model
    with open_store(args, create=False) as store:
        results = [edit_drops(store, ids, n_boot=args.bootstrap, seed=args.seed)
                   for ids in runs_by_model(store, args.runs)]
    emit(args, {"models": [r.to_dict() for r in results]}, "\n\n".join(r.text() for r in results))
    return 0
