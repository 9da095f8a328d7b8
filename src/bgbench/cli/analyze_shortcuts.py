"""`bgbench analyze shortcuts`: the shortcut table of the stored runs (Whac-A-Mole's columns beside
the Backgrounds Challenge's) and each derived model's paired changes."""
from __future__ import annotations

import argparse

from .arguments import add_db_arg, add_output_args
from .folders import open_store
from .output import emit


def register(sub, measure) -> None:
    p = sub.add_parser("shortcuts", help=measure.help.replace("%", "%%"))
    p.add_argument("--runs", type=int, nargs="+", metavar="RUN", help="only these runs (default: every finished run)")
    p.add_argument("--models", nargs="+", metavar="PATTERN",
                   help="only these models (names or fnmatch patterns such as 'timm:resnet*')")
    p.add_argument("--seed", type=int, default=0, help="seed of the paired changes' bootstrap (default %(default)s)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import shortcut_table
    with open_store(args, create=False) as store:
        table = shortcut_table(store, run_ids=args.runs, models=args.models, seed=args.seed)
    emit(args, table.to_dict(), table.text())
    return 0
