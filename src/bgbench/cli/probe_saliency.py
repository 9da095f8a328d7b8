"""`bgbench probe saliency`: Grad-CAM alignment with the object mask, per class, with example overlays."""
from __future__ import annotations

import argparse

from .common import add_db_arg, add_model_args, add_output_args, create_model, emit


def register(sub) -> None:
    p = sub.add_parser("saliency", help="Grad-CAM on the predicted class: precision, IoU, Dice, density vs the mask")
    add_model_args(p, batch_size=32)
    p.add_argument("--data", required=True, help="dataset root with original/ and fg_mask/")
    p.add_argument("--layer", help="Grad-CAM layer, a module path inside the network (default: the last feature "
                                   "stage of a timm model, else the last convolution)")
    p.add_argument("--examples", type=int, default=8, help="images in the overlay PNG (default %(default)s)")
    p.add_argument("--out", default=".", help="folder for saliency_overlays.png (default: current folder)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import probe_saliency
    from ..runs import record
    from ..store import Store
    result = probe_saliency(create_model(args), args.data, layer=args.layer, batch_size=args.batch_size,
                            device=args.device, examples=args.examples, out_dir=args.out, progress=not args.quiet)
    with Store(args.db) as store:
        run_id = record(result, store)
        where = store.path
    emit(args, result.to_dict(), f"{result.table()}\nrun {run_id} stored in {where}")
    return 0
