"""`bgbench compare RUN_A RUN_B`: two stored runs on the same images, paired tests."""
from __future__ import annotations

import argparse

from .common import add_db_arg, add_output_args, emit


def register(sub) -> None:
    p = sub.add_parser("compare", help="two eval (or challenge) runs on the same data and images: McNemar, "
                                       "BG-Gap difference (runs on different data or images are refused)")
    p.add_argument("run_a", type=int, help="id of run A")
    p.add_argument("run_b", type=int, help="id of run B")
    p.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap (default %(default)s)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analyses.compare import compare_runs
    from ..store import Store
    with Store(args.db) as store:
        result = compare_runs(store, args.run_a, args.run_b, seed=args.seed)
    emit(args, result.to_dict(), result.table())
    return 0
