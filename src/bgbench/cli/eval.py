"""`bgbench eval`: accuracy per IN-9 variant with 95% intervals, and the BG-Gap (of a model, or of a
predictions file when only predictions exist)."""
from __future__ import annotations

import argparse

from ..errors import BgbenchError
from ..measures.eval.config import EvalConfig
from ..variants.registry import IN9_VARIANTS, list_variants
from .arguments import (add_config_flags, add_db_arg, add_mapping_arg, add_model_args,
                        add_output_args, add_protocol_arg, add_seed_arg, config_default, create_model)
from .folders import open_store
from .output import emit, stored_in

#: Label spaces of a predictions file (mirrors `measures.eval.prediction_file.LABEL_SPACES`; no torch here).
LABEL_SPACES = ("dataset", "imagenet1k")


def register(sub) -> None:
    p = sub.add_parser("eval", help="accuracy per IN-9 variant with 95%% intervals, and the BG-Gap")
    source = p.add_mutually_exclusive_group(required=True)
    add_model_args(p, EvalConfig, model_group=source)
    source.add_argument("--predictions", metavar="FILE.csv",
                   help="instead of --model: record an eval run from a file of image_id,variant,pred rows "
                        "(a model known only by its predictions, e.g. behind an API)")
    p.add_argument("--label-space", choices=LABEL_SPACES, default="dataset",
                   help="--predictions: pred is a dataset class (index or name) or an ImageNet class "
                        "(imagenet1k, mapped to IN-9) (default %(default)s)")
    p.add_argument("--name", help="--predictions: the model's name (run model predictions:NAME; default: the "
                                  "file's stem)")
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout, a RIVAL10 release, or a group "
                                                  "dataset (Waterbirds' metadata.csv, a groups.csv: image,class,group), "
                                                  "the last two with variant original only")
    p.add_argument("--split", help="split to evaluate (default: the dataset's evaluation split: val for IN-9 and "
                                   "RIVAL10's folders, test for Waterbirds and a groups.csv with a split column)")
    p.add_argument("--variants", nargs="+", metavar="VARIANT",
                   help=f"variant folders to evaluate: {', '.join(list_variants())}, or edit levels such as "
                        f"size_0.05 (default: those of {', '.join(IN9_VARIANTS)} present; every folder when only "
                        f"original is, as in `bgbench edit` output)")
    add_mapping_arg(p, config_default(EvalConfig, "mapping"))
    p.add_argument("--ten-crop", action="store_true", default=config_default(EvalConfig, "ten_crop"),
                   help="Resize(256), TenCrop(224) and average the logits of the ten crops (seed 003's test-time option)")
    add_seed_arg(p, config_default(EvalConfig, "seed"), "seed of the BG-Gap's bootstrap")
    add_config_flags(p, EvalConfig)
    add_protocol_arg(p)
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


def _from_model(args: argparse.Namespace):
    from ..api import evaluate
    model = create_model(args)
    return evaluate(model, args.data, variants=args.variants, mapping=args.mapping, batch_size=args.batch_size,
                    device=args.device, progress=not args.quiet, seed=args.seed, ten_crop=args.ten_crop,
                    protocol=args.protocol, split=args.split, workers=args.workers)


def _from_predictions(args: argparse.Namespace):
    from ..api import evaluate_predictions
    ignored = [flag for flag, given in (("--checkpoint", args.checkpoint), ("--variants", args.variants),
                                        ("--ten-crop", args.ten_crop), ("--workers", args.workers)) if given]
    if ignored:
        raise BgbenchError(f"--predictions records a file's predictions; it takes no {', '.join(ignored)} "
                           f"(the file's variants are evaluated)")
    return evaluate_predictions(args.predictions, args.data, label_space=args.label_space, mapping=args.mapping,
                                name=args.name, seed=args.seed, protocol=args.protocol, class_map=args.class_map)
