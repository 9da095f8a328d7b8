"""`bgbench build`: the IN-9 variants from class folders of images plus boxes (and masks)."""
from __future__ import annotations

import argparse

from .common import add_db_arg, add_output_args, add_shard_arg, emit


def register(sub) -> None:
    p = sub.add_parser("build", help="build the IN-9 variants (GrabCut masks, filters, mixing) from images and boxes")
    p.add_argument("--images", required=True, help="folder with one subfolder of images per class")
    p.add_argument("--boxes", required=True,
                   help="folder of VOC/ImageNet <stem>.xml files (flat or per class) or a COCO .json file")
    p.add_argument("--masks", help="folder of <class>/<stem>.png or .npy masks (nonzero = foreground); skip GrabCut")
    p.add_argument("--out", required=True, help="output root in the IN-9 layout")
    p.add_argument("--split", choices=["val", "train"], default="val")
    p.add_argument("--seed", type=int, default=0, help="seeds GrabCut, class balancing and donor choice")
    p.add_argument("--workers", type=int, default=1, help="worker processes (the output does not depend on it)")
    p.add_argument("--resize", type=int, default=256, help="shorter side after resizing (torchvision Resize)")
    p.add_argument("--crop", type=int, default=224, help="center crop size (torchvision CenterCrop)")
    p.add_argument("--no-resize", action="store_true", help="use the images as they are (no resize, no crop)")
    p.add_argument("--balance", action=argparse.BooleanOptionalAction, default=True,
                   help="drop images at random down to the smallest class count, as the paper builds IN-9 "
                        "(Appendix A, filter 4; default on)")
    p.add_argument("--grabcut-tries", type=int, default=3, help="GrabCut retries (different seeds) before rejecting")
    add_shard_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing build of this split")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import build
    from ..runs import record
    from ..store import Store
    from ..variants.preprocess import Preprocess
    pre = Preprocess(resize=None, crop=None) if args.no_resize else Preprocess(resize=args.resize, crop=args.crop)
    result = build(args.images, args.boxes, args.out, masks=args.masks, split=args.split, seed=args.seed,
                   workers=args.workers, preprocess=pre, balance=args.balance, tries=args.grabcut_tries,
                   overwrite=args.overwrite, shard=args.shard,
                   progress=not args.quiet)
    doc, text = result.outputs(), result.summary()
    if result.provenance is not None:  # a shard is recorded once merged, not before
        with Store(args.db) as store:
            doc["run_id"] = record(result, store)
        text += f"\nbuild recorded as run {doc['run_id']}"
    emit(args, doc, text)
    return 0
