"""`bgbench eval`: accuracy per IN-9 variant with 95% intervals, and the BG-Gap (of a model, or of a
predictions file when only predictions exist). The flags are `EvalConfig`'s (and, for
--predictions, `PredictionFileConfig`'s) and the model options; the command calls the API."""
from __future__ import annotations

import argparse

from ..errors import BgbenchError
from ..measures.eval.config import EvalConfig, PredictionFileConfig
from ..options import flagged_fields
from .arguments import add_config_flags, add_db_arg, add_model_args, add_output_args
from .folders import open_store
from .output import emit, stored_in


def register(sub) -> None:
    p = sub.add_parser("eval", help="accuracy per IN-9 variant with 95%% intervals, and the BG-Gap")
    source = p.add_mutually_exclusive_group(required=True)
    add_model_args(p, EvalConfig, model_group=source)
    source.add_argument("--predictions", metavar="FILE.csv",
                        help="instead of --model: record an eval run from a file of image_id,variant,pred rows "
                             "(a model known only by its predictions, e.g. behind an API)")
    add_config_flags(p, PredictionFileConfig)
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout, a RIVAL10 release, or a group "
                                                  "dataset (Waterbirds' metadata.csv, a groups.csv: image,class,group), "
                                                  "the last two with variant original only")
    add_config_flags(p, EvalConfig)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..recording import record
    report = _from_predictions(args) if args.predictions else _from_model(args)
    if report is None:  # a torchrun rank other than 0: rank 0 records and reports
        return 0
    with open_store(args) as store:
        record(report, store)
        stored_in(report.run_id, store.path)
    emit(args, report.to_dict(), report.text())
    return 0


def _options(args: argparse.Namespace, config: type) -> dict:
    return {f.name: getattr(args, f.name) for f, _ in flagged_fields(config)}


def _from_model(args: argparse.Namespace):
    from ..api import evaluate
    from .arguments import create_model
    return evaluate(create_model(args), args.data, batch_size=args.batch_size, device=args.device,
                    progress=not args.quiet, **_options(args, EvalConfig))


def _from_predictions(args: argparse.Namespace):
    from ..api import evaluate_predictions
    ignored = [flag for flag, given in (("--checkpoint", args.checkpoint), ("--variants", args.variants),
                                        ("--ten-crop", args.ten_crop), ("--workers", args.workers)) if given]
    if ignored:
        raise BgbenchError(f"--predictions records a file's predictions; it takes no {', '.join(ignored)} "
                           f"(the file's variants are evaluated)")
    return evaluate_predictions(args.predictions, args.data, mapping=args.mapping, seed=args.seed,
                                protocol=args.protocol, class_map=args.class_map,
                                **_options(args, PredictionFileConfig))
