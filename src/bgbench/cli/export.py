"""`bgbench export`: an eval run's per-image predictions as a predictions file (CSV)."""
from __future__ import annotations

import argparse

from .common import add_db_arg, emit


def register(sub) -> None:
    p = sub.add_parser("export", help="write an eval run's per-image predictions as a predictions file (CSV)")
    p.add_argument("run", type=int, metavar="RUN", help="eval run id (see `bgbench runs --kind eval`)")
    p.add_argument("--out", required=True, metavar="FILE.csv", help="where to write the file")
    p.add_argument("--format", choices=("csv",), default="csv", help="file format (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print what was written as one JSON document")
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import export_predictions
    from ..store import default_db_path
    written = export_predictions(args.db or default_db_path(), args.run, args.out)
    flag = " --label-space imagenet1k" if written["label_space"] == "imagenet1k" else ""
    emit(args, written, f"wrote {written['rows']} predictions of run {args.run} ({', '.join(written['variants'])}) "
                        f"to {written['path']}\nread back with: bgbench eval --predictions {written['path']} "
                        f"--data ROOT{flag}")
    return 0
