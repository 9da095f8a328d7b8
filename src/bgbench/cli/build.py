"""`bgbench build`: the IN-9 variants from class folders of images plus boxes (and masks), or IN-9,
IN-9L and Full-IN from an ImageNet 2012 root (`--imagenet ROOT --preset ...`)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import BgbenchError
from ..signatures import default_of
from ..variants.build import BuildConfig
from ..variants.presets import PRESETS
from ..variants.preprocess import Preprocess
from .arguments import add_output_args, add_seed_arg, add_shard_arg
from .output import emit, record_dataset_run


def register(sub) -> None:
    p = sub.add_parser("build", help="build the IN-9 variants (GrabCut masks, filters, mixing) from images and boxes")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--images", help="folder with one subfolder of images per class")
    src.add_argument("--imagenet", metavar="ROOT",
                     help="an ImageNet 2012 root, the ILSVRC release (ROOT/ILSVRC/Data/CLS-LOC/, LOC_val_solution.csv) "
                          "or torchvision's layout (ROOT/train/<wnid>/, ROOT/val/<wnid>/)")
    p.add_argument("--preset", choices=PRESETS,
                   help="with --imagenet: in9 (the 370 mapped synsets in IN-9's 9 folders, one box, the filters, "
                        "8 variants, balanced), in9l (every image of those synsets, original only, balanced) or "
                        "full-in (all 1000 synsets as wnid folders, the filters, 8 variants, not balanced); "
                        "default in9")
    p.add_argument("--boxes",
                   help="folder of VOC/ImageNet <stem>.xml files (flat or per class) or a COCO .json file; with "
                        "--imagenet, the box archives' XML folder (torchvision's layout; the ILSVRC release has "
                        "its own)")
    p.add_argument("--masks", help="folder of <class>/<stem>.png or .npy masks (nonzero = foreground); skip GrabCut")
    p.add_argument("--out", required=True, help="output root in the IN-9 layout")
    p.add_argument("--split", choices=["val", "train"], default=default_of(BuildConfig, "split"),
                   help="split folder to write (default %(default)s)")
    add_seed_arg(p, default_of(BuildConfig, "seed"), "seeds GrabCut, class balancing and donor choice")
    p.add_argument("--workers", type=int, default=default_of(BuildConfig, "workers"),
                   help="worker processes (the output does not depend on it; default %(default)s)")
    p.add_argument("--resize", type=int, default=default_of(Preprocess, "resize"),
                   help="shorter side after resizing (torchvision Resize; default %(default)s)")
    p.add_argument("--crop", type=int, default=default_of(Preprocess, "crop"),
                   help="center crop size (torchvision CenterCrop; default %(default)s)")
    p.add_argument("--no-resize", action="store_true", help="use the images as they are (no resize, no crop)")
    p.add_argument("--balance", action=argparse.BooleanOptionalAction, default=default_of(BuildConfig, "balance"),
                   help="drop images at random down to the smallest class count, as the paper builds IN-9 "
                        "(Appendix A, filter 4; default on, except for --preset full-in)")
    p.add_argument("--grabcut-tries", type=int, default=default_of(BuildConfig, "tries"),
                   help="GrabCut retries (different seeds) before rejecting (default %(default)s)")
    add_shard_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing build of this split")
    p.add_argument("--preview", action="store_true",
                   help="also write a contact sheet beside the build (OUT-preview-SPLIT.png): each image's original, "
                        "mask and variants in a row, classes in turn (up to 24 rows)")
    add_output_args(p, quiet_help="no progress bars",
                    db="SQLite results store where the build is recorded (default: $BGBENCH_DB if set, "
                       "else ~/.bgbench/results.db)")


def run(args: argparse.Namespace) -> int:
    from ..api import build
    if args.imagenet is None and args.preset is not None:
        raise BgbenchError("--preset builds from an ImageNet root: give --imagenet ROOT instead of --images")
    if args.images is not None and args.boxes is None:
        raise BgbenchError("--images needs --boxes (a folder of VOC/ImageNet .xml files or a COCO .json file)")
    # image ids (class folder/stem) are stored as UTF-8 text and seed GrabCut by hashing: a file name with a
    # stray byte is refused in one line, before any image is built (ImageNet's own names are ASCII; walking
    # its 1.3M files would take minutes; a missing folder the builder names)
    for path in Path(args.images).rglob("*") if args.images is not None and Path(args.images).is_dir() else ():
        try:
            path.name.encode("utf-8")
        except UnicodeEncodeError:
            raise BgbenchError(f"--images: {os.fsencode(path)!r} has a name that is not valid UTF-8; rename it "
                               f"(image ids are stored as UTF-8 text)") from None
    if args.preview and args.shard is None:
        from ..drawing.contact import preview_path, refuse_foreign_preview
        refuse_foreign_preview(preview_path(args.out, args.split))
    pre = Preprocess(resize=None, crop=None) if args.no_resize else Preprocess(resize=args.resize, crop=args.crop)
    result = build(args.out, data=args.images or args.imagenet, boxes=args.boxes, masks=args.masks,
                   split=args.split, seed=args.seed, workers=args.workers, preprocess=pre, balance=args.balance,
                   tries=args.grabcut_tries, overwrite=args.overwrite, shard=args.shard, progress=not args.quiet,
                   preset=(args.preset or "in9") if args.imagenet is not None else None)
    doc = result.outputs()
    record_dataset_run(args, result, doc, "build")
    text = result.text()
    if args.preview and args.shard is None:  # a shard holds part of the split: preview the merged build
        from ..drawing.contact import contact_sheet
        sheet = contact_sheet(args.out, split=args.split)
        doc = {**doc, "preview": str(sheet)}
        text += f"\npreview: {sheet}"
    return emit(args, doc, text)
