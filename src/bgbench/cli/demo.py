"""`bgbench demo`: Synthetic-9 end to end, offline, on a CPU."""
from __future__ import annotations

import argparse

from .arguments import add_db_arg, add_output_args

from .output import emit

#: The demo's output folder without --out (its store is OUT/results.db unless --db says otherwise).
DEFAULT_OUT = "bgbench-demo"


def register(sub) -> None:
    p = sub.add_parser("demo", help="Synthetic-9 end to end: ORIGINAL vs MIXED-RAND training, BG-Gaps, analyses, "
                                    "HTML report (offline)")
    p.add_argument("--out", default=DEFAULT_OUT, help="output folder (default %(default)s)")
    add_db_arg(p, help="SQLite results store (default: OUT/results.db, i.e. ./bgbench-demo/results.db; "
                       "$BGBENCH_DB is not used, so the demo never mixes its runs into your store)")
    add_output_args(p, quiet_help="no progress bars", db=None)


def run(args: argparse.Namespace) -> int:
    from ..demo import run_demo
    result = run_demo(out=args.out, db=args.db, progress=not args.quiet)
    return emit(args, result.summary, result.text())
