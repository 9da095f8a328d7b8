"""`bgbench leaderboard`: models in the store ranked per dataset, with the published rows."""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from ..reporting.leaderboard import FORMATS
from .arguments import add_db_arg, add_json_arg
from .output import db_source, open_store, to_json


def register(sub) -> None:
    p = sub.add_parser("leaderboard", help="models in the store ranked within each dataset by challenge accuracy "
                                           "(models without a challenge run apart, by MIXED-RAND accuracy), "
                                           "with the published IN-9 rows")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format (default %(default)s)")
    add_json_arg(p, help="the same as --format json: one JSON document on stdout", dest="format",
                 action="store_const", const="json")
    p.add_argument("--no-reported", dest="reported", action="store_false", help="only rows measured here")
    p.add_argument("--out", help="write to this file instead of stdout (e.g. leaderboard.html)")
    add_db_arg(p)


def run(args: argparse.Namespace) -> int:
    from ..console import status
    from ..errors import BgbenchError
    from ..reporting.leaderboard import leaderboard, render
    from ..reporting.render import leaderboard_html
    try:
        store = open_store(args, create=False)
    except BgbenchError as e:  # nothing measured yet: the published rows still make a leaderboard
        if db_source(args) != "the default store" or not args.reported:
            raise
        status(f"note: {e}; showing the published rows only")
        store = None
    with store if store is not None else contextlib.nullcontext():  # a damaged store is named in one line
        rows = leaderboard(store, include_reported=args.reported)
    text = to_json(rows) if args.format == "json" else leaderboard_html(rows) if args.format == "html" \
        else render(rows, args.format)
    if args.out:
        try:
            Path(args.out).write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            raise BgbenchError(f"--out: cannot write {args.out}: {e.strerror}") from None
        status(f"leaderboard written to {args.out}")
    else:
        print(text)
    return 0
