"""`bgbench compare RUN_A RUN_B`: two stored runs on the same images, paired tests."""
from __future__ import annotations

import argparse

from ..api import compare
from .arguments import add_output_args, add_seed_arg, param_default
from .output import emit, open_store


def register(sub) -> None:
    p = sub.add_parser("compare", help="two eval (or challenge) runs on the same data and images: McNemar, "
                                       "BG-Gap difference (runs on different data or images are refused)")
    p.add_argument("run_a", type=int, help="id of run A (see `bgbench runs`)")
    p.add_argument("run_b", type=int, help="id of run B")
    add_seed_arg(p, param_default(compare, "seed"), "seed of the paired bootstrap")
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    with open_store(args, create=False) as store:
        result = compare(args.run_a, args.run_b, store=store, seed=args.seed)
    return emit(args, result.to_dict(), result.text())
