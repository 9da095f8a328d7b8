"""`bgbench demo`: Synthetic-9 end to end, offline, on a CPU."""
from __future__ import annotations

import argparse

from .common import add_db_arg


def register(sub) -> None:
    p = sub.add_parser("demo", help="Synthetic-9 end to end: ORIGINAL vs MIXED-RAND training, BG-Gaps, analyses, "
                                    "HTML report (offline)")
    p.add_argument("--out", default="bgbench-demo", help="output folder (default %(default)s)")
    add_db_arg(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..demo import run_demo
    print(run_demo(out=args.out, db=args.db, progress=not args.quiet).text())
    return 0
