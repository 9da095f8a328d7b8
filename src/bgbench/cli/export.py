"""`bgbench export`: an eval run's per-image predictions as a predictions file (CSV)."""
from __future__ import annotations

import argparse

from .arguments import add_db_arg, add_json_arg, add_run_arg

from .folders import open_store

from .output import emit


def register(sub) -> None:
    p = sub.add_parser("export", help="write an eval run's per-image predictions as a predictions file (CSV)")
    add_run_arg(p, "eval")
    p.add_argument("--out", required=True, metavar="FILE.csv", help="where to write the file")
    p.add_argument("--format", choices=("csv",), default="csv", help="file format (default %(default)s)")
    add_json_arg(p, help="print what was written as one JSON document (path, rows, label space, columns)")
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import export_predictions
    with open_store(args, create=False) as store:
        written = export_predictions(store, args.run, args.out)
    flag = " --label-space imagenet1k" if written["label_space"] == "imagenet1k" else ""
    emit(args, written, f"wrote {written['rows']} predictions of run {args.run} ({', '.join(written['variants'])}) "
                        f"to {written['path']}\nread back with: bgbench eval --predictions {written['path']} "
                        f"--data ROOT{flag}")
    return 0
