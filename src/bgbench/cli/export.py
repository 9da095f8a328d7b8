"""`bgbench export`: an eval run's per-image predictions as a predictions file (CSV), or, with
--scorecard, the scorecard as files to publish (scorecard.csv and one model_info JSON per model and
dataset)."""
from __future__ import annotations

import argparse

from ..classes import IMAGENET1K
from ..errors import BgbenchError
from .arguments import add_db_arg, add_json_arg

from .output import emit, open_store


def register(sub) -> None:
    p = sub.add_parser("export", help="write an eval run's per-image predictions as a predictions file (CSV), or "
                                      "the scorecard as CSV and JSON files to publish (--scorecard)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("run", type=int, nargs="?", help="id of a stored eval run (see `bgbench runs`)")
    what.add_argument("--scorecard", action="store_true",
                      help="write the scorecard instead: OUT/scorecard.csv (one row per model and dataset: provenance, "
                           "then each headline's value, interval and n) and OUT/model_info/<dataset>/<model>.json "
                           "(the same row, laid out as RobustBench's model_info entries)")
    pick = p.add_mutually_exclusive_group()
    pick.add_argument("--runs", type=int, nargs="+", metavar="ID", help="--scorecard: only these eval/challenge runs")
    pick.add_argument("--models", nargs="+", metavar="M",
                      help="--scorecard: only these models (names or fnmatch patterns)")
    p.add_argument("--out", required=True, metavar="FILE.csv|DIR",
                   help="where to write: the predictions file, or the folder of the scorecard's files")
    p.add_argument("--format", choices=("csv",), default="csv", help="file format (default %(default)s)")
    add_json_arg(p, help="print what was written as one JSON document (paths, rows, and for a run its label space "
                         "and columns)")
    add_db_arg(p)


def run(args: argparse.Namespace) -> int:
    if args.scorecard:
        from ..reporting.export import export_scorecard
        with open_store(args, create=False) as store:
            written = export_scorecard(store, args.out, run_ids=args.runs, models=args.models)
        from ..console import plural
        return emit(args, written, f"wrote the scorecard of {plural(written['models'], 'model')} on "
                                   f"{plural(written['datasets'], 'dataset')} ({plural(written['rows'], 'row')}): "
                                   f"{written['csv']} and {plural(len(written['model_info']), 'JSON file')} under "
                                   f"{written['out']}/model_info/")
    if args.runs or args.models:
        raise BgbenchError("--runs and --models pick the models of --scorecard; a predictions file is one run's")
    from ..prediction_files import export_predictions
    with open_store(args, create=False) as store:
        written = export_predictions(store, int(args.run), args.out)
    flag = f" --label-space {IMAGENET1K}" if written["label_space"] == IMAGENET1K else ""
    return emit(args, written, f"wrote {written['rows']} predictions of run {args.run} "
                               f"({', '.join(written['variants'])}) to {written['path']}\nread back with: "
                               f"bgbench eval --predictions {written['path']} --data ROOT{flag}")
