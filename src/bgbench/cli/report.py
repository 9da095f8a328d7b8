"""`bgbench report`: one self-contained HTML page from the results store (no inference)."""
from __future__ import annotations

import argparse

from ..api import report
from .arguments import add_output_args, param_default

from .output import emit, open_store

#: Where the report goes without --out: the API's default.
DEFAULT_OUT = param_default(report, "out")


def register(sub) -> None:
    p = sub.add_parser("report", help="HTML report of the stored runs: accuracies, BG-Gap, challenge figures, "
                                      "analyses, probes, edits, provenance, paired comparisons (no inference)")
    pick = p.add_mutually_exclusive_group()
    pick.add_argument("--runs", type=int, nargs="+", metavar="ID", help="only these eval/challenge runs")
    pick.add_argument("--models", nargs="+", metavar="M", help="only these models (names or fnmatch patterns)")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help="folder for index.html, leaderboard.html and figures/ (default %(default)s)")
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    with open_store(args, create=False) as store:
        result = report(store, args.out, run_ids=args.runs, models=args.models, progress=not args.quiet)
    return emit(args, result.to_dict(), result.text())
