"""`bgbench analyze edits RUN...`: ImageNet-E's accuracy drop from original per attribute level."""
from __future__ import annotations

import argparse

from .common import add_db_arg, add_output_args, emit


def register(sub) -> None:
    p = sub.add_parser("edits", help="accuracy drop from original per edit level, with paired 95%% intervals "
                                     "(eval runs of a `bgbench edit` folder)")
    p.add_argument("runs", nargs="+", type=int, metavar="RUN",
                   help="eval run ids (see `bgbench runs`); runs of several models give one table each")
    p.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap (default %(default)s)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default %(default)s)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import checks
    from ..analyses.edits import edit_drops_by_model
    from ..store import Store
    checks.at_least("--bootstrap", args.bootstrap, 100)
    with Store(args.db) as store:
        results = edit_drops_by_model(store, args.runs, n_boot=args.bootstrap, seed=args.seed)
    emit(args, {"models": [r.to_dict() for r in results]}, "\n\n".join(r.table() for r in results))
    return 0
