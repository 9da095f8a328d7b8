"""`bgbench build`: the IN-9 variants from class folders of images plus boxes (and masks), or IN-9,
IN-9L and Full-IN from an ImageNet 2012 root (`--imagenet ROOT --preset ...`)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import BgbenchError
from ..options import flagged_fields
from ..variants.build import BuildConfig
from ..variants.preprocess import Preprocess
from .arguments import add_config_flags, config_options, add_output_args, add_shard_arg
from .output import emit, record_dataset_run


def register(sub) -> None:
    p = sub.add_parser("build", help="build the IN-9 variants (GrabCut masks, filters, mixing) from images and boxes")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--images", help="folder with one subfolder of images per class")
    src.add_argument("--imagenet", metavar="ROOT",
                     help="an ImageNet 2012 root, the ILSVRC release (ROOT/ILSVRC/Data/CLS-LOC/, LOC_val_solution.csv) "
                          "or torchvision's layout (ROOT/train/<wnid>/, ROOT/val/<wnid>/)")
    for f, _ in flagged_fields(BuildConfig):
        if f.name == "balance":  # the preprocessing flags, between --workers and --balance
            add_config_flags(p, Preprocess)
            p.add_argument("--no-resize", action="store_true", help="use the images as they are (no resize, no crop)")
        add_config_flags(p, BuildConfig, only=(f.name,))
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
    options = config_options(args, BuildConfig)
    pre = Preprocess(resize=None, crop=None) if args.no_resize else Preprocess(resize=args.resize, crop=args.crop)
    result = build(**{**options, "preset": (args.preset or "in9") if args.imagenet is not None else None},
                   data=args.images or args.imagenet, preprocess=pre, shard=args.shard, overwrite=args.overwrite,
                   progress=not args.quiet)
    doc = result.outputs()
    record_dataset_run(args, result, doc, "build")
    text = result.text()
    if args.preview and args.shard is None:  # a shard holds part of the split: preview the merged build
        from ..drawing.contact import contact_sheet
        sheet = contact_sheet(args.out, split=args.split)
        doc = {**doc, "preview": str(sheet)}
        text += f"\npreview: {sheet}"
    return emit(args, doc, text)
