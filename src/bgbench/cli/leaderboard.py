"""`bgbench leaderboard`: models in the store ranked per dataset, with the published rows."""
from __future__ import annotations

import argparse

from ..leaderboard import FORMATS
from .common import add_db_arg


def register(sub) -> None:
    p = sub.add_parser("leaderboard", help="models in the store ranked by challenge accuracy within each dataset, "
                                           "with the published IN-9 rows")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--no-reported", dest="reported", action="store_false", help="only rows measured here")
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..leaderboard import leaderboard, render
    from ..store import Store
    with Store(args.db) as store:
        print(render(leaderboard(store, include_reported=args.reported), args.format))
    return 0
