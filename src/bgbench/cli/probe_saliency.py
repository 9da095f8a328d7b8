"""`bgbench probe saliency`: Grad-CAM alignment with the object mask, per class, with example overlays."""
from __future__ import annotations

import argparse

from ..analyses.saliency import SaliencyConfig
from .common import add_db_arg, add_model_args, add_output_args, config_default, create_model, emit, open_store, stored_in


def register(sub) -> None:
    p = sub.add_parser("saliency", help="Grad-CAM on the predicted class: precision, IoU, Dice, density vs the mask")
    add_model_args(p, SaliencyConfig)
    p.add_argument("--data", required=True, help="dataset root with original/ and fg_mask/")
    p.add_argument("--layer", help="Grad-CAM layer, a module path inside the network (default: the last feature "
                                   "stage of a timm model, else the last convolution)")
    p.add_argument("--examples", type=int, default=config_default(SaliencyConfig, "examples"),
                   help="images in the overlay PNG (default %(default)s)")
    p.add_argument("--out", default=".", help="folder for saliency_overlays.png (default: current folder)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import probe_saliency
    from ..runs import record
    result = probe_saliency(create_model(args), args.data, layer=args.layer, batch_size=args.batch_size,
                            device=args.device, examples=args.examples, out_dir=args.out, progress=not args.quiet)
    with open_store(args) as store:
        run_id = record(result, store)
        stored_in(run_id, store.path)
    emit(args, result.to_dict(), result.table())
    return 0
