"""`bgbench eval`: accuracy per IN-9 variant with 95% intervals, and the BG-Gap (of a model, or of a
predictions file when only predictions exist). The flags are `EvalConfig`'s (and, for
--predictions, `PredictionFileConfig`'s) and the model options; the command calls the API."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import BgbenchError
from ..measures.eval.config import EvalConfig, PredictionFileConfig
from .arguments import add_config_flags, add_model_args, add_output_args, config_options
from .output import emit, open_store, stored_in


def register(sub) -> None:
    p = sub.add_parser("eval", help="accuracy per IN-9 variant with 95%% intervals, and the BG-Gap")
    source = p.add_mutually_exclusive_group(required=True)
    add_model_args(p, EvalConfig, model_group=source)
    source.add_argument("--predictions", metavar="FILE.csv",
                        help="instead of --model: record an eval run from a file of image_id,variant,pred rows "
                             "(a model known only by its predictions, e.g. behind an API)")
    add_config_flags(p, PredictionFileConfig)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", help="dataset root in the IN-9 layout, a RIVAL10 release, a group dataset (Waterbirds' "
                                      "metadata.csv, a groups.csv: image,class,group), or ImageNet-style class folders "
                                      "(ImageNet, Stylized-ImageNet, ImageNet-R), the last three with variant original "
                                      "only")
    where.add_argument("--imagenet", metavar="ROOT",
                       help="instead of --data: ImageNet's own images at --split (default val), in either release "
                            "layout (the ILSVRC archive, or torchvision's ROOT/val/<wnid>/), each read as Resize(256), "
                            "CenterCrop(224) and stored under its file name (ImageNet-X and ImageNet-W join on it)")
    add_config_flags(p, EvalConfig)
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    from ..recording import record
    if args.imagenet is not None:  # one of ImageNet's release layouts, or one line saying what it is not
        from ..data.imagenet import imagenet_tree, open_tree
        open_tree(args.imagenet)  # a clear line for a root that is neither layout
        if imagenet_tree(Path(args.imagenet).expanduser()) is None:
            raise BgbenchError(f"--imagenet {args.imagenet}: no ImageNet release layout there "
                               f"(ROOT/ILSVRC/Data/CLS-LOC/ or ROOT/val/<wnid>/)")
        args.data = args.imagenet
    report = _from_predictions(args) if args.predictions else _from_model(args)
    if report is None:  # a torchrun rank other than 0: rank 0 records and reports
        return 0
    with open_store(args) as store:
        if not getattr(report, "reused", False):  # a finished run shown again is already recorded
            record(report, store)
        stored_in(report.run_id, store.path)
    return emit(args, report.to_dict(), report.text())


def _from_model(args: argparse.Namespace):
    from ..api import evaluate
    from .arguments import load_model
    model = load_model(args)
    reused = None if args.rerun else _finished(args, model)
    if reused is not None:
        return reused
    return evaluate(model, args.data, batch_size=args.batch_size, device=args.device,
                    progress=not args.quiet, **config_options(args, EvalConfig))


def _finished(args: argparse.Namespace, model):
    """The report of a finished run of this very eval (the same model string, weights, model
    options, eval options and data) when the store holds one, said on stderr; None otherwise. Only
    a plain process looks (under torchrun every rank would have to agree)."""
    from ..console import status
    from ..data.resolve import resolve_layout
    from ..distributed import launched
    from ..runs import stored_report
    from ..studies.plan import finished_run, measure_identity
    if launched().world > 1:
        return None
    try:
        store = open_store(args, create=False)
    except BgbenchError:  # no store yet: nothing to reuse
        return None
    identity = measure_identity("eval", config_options(args, EvalConfig))
    fingerprint = resolve_layout(args.data, split=args.split).fingerprint()
    with store:
        run_id = finished_run(store, "eval", model.spec.name, model.spec.checkpoint_sha256,
                              getattr(model, "identity", None), identity, fingerprint, statuses=("done",))
        if run_id is None:
            return None
        status(f"reusing eval run {run_id}: it is finished, with the same model, weights, options and data "
               f"(--rerun predicts anew)")
        report = stored_report(store, run_id)
    report.reused = True
    return report


def _from_predictions(args: argparse.Namespace):
    from ..prediction_files import predictions_report
    ignored = [flag for flag, given in (("--checkpoint", args.checkpoint), ("--variants", args.variants),
                                        ("--ten-crop", args.ten_crop), ("--workers", args.workers)) if given]
    if ignored:
        raise BgbenchError(f"--predictions records a file's predictions; it takes no {', '.join(ignored)} "
                           f"(the file's variants are evaluated)")
    cfg = PredictionFileConfig(mapping=args.mapping, seed=args.seed, protocol=args.protocol,
                               class_map=str(args.class_map) if args.class_map else None,
                               **config_options(args, PredictionFileConfig))
    return predictions_report(args.predictions, args.data, cfg)
