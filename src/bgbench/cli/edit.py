"""`bgbench edit`: ImageNet-E attribute edits (remove, size, position, rotation, background complexity)."""
from __future__ import annotations

import argparse
import importlib

from ..edits.backends import list_complexity_editors, list_inpainters
from ..edits.registry import ATTRIBUTES
from .common import add_db_arg, add_input_args, add_output_args, add_shard_arg, emit


def register(sub) -> None:
    p = sub.add_parser("edit", help="ImageNet-E attribute edits of a masked dataset, one IN-9-layout folder per level")
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout with fg_mask/ (IN-9, Synthetic-9, a build)")
    p.add_argument("--out", required=True, help="output root: DIR/original, DIR/fg_mask and DIR/<attribute>_<level>")
    p.add_argument("--attributes", nargs="+", choices=ATTRIBUTES, default=list(ATTRIBUTES), metavar="ATTR",
                   help=f"attributes to edit (default: all of {', '.join(ATTRIBUTES)})")
    p.add_argument("--levels", nargs="+", metavar="PATTERN",
                   help="only these level folders (fnmatch patterns, e.g. 'size_*' complexity_20)")
    p.add_argument("--angles", nargs="+", type=float, metavar="DEG",
                   help="rotation angles in degrees, one folder each (default: one seeded random angle per image, "
                        "rotation_random; seed 003 gives no fixed angle)")
    p.add_argument("--split", choices=["val", "train"], default="val")
    p.add_argument("--seed", type=int, default=0, help="seeds positions and random angles per image (default %(default)s)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (the output does not depend on it)")
    p.add_argument("--inpainter", default="telea", help=f"object-removal backend (registered: {', '.join(list_inpainters())})")
    p.add_argument("--complexity-editor", default="fft",
                   help=f"background-complexity backend (registered: {', '.join(list_complexity_editors())})")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first, so that it can register inpainters or complexity editors")
    p.add_argument("--model", help="classifier for the adversarial complexity level (timm:ARCH, file:PATH, zoo:NAME, "
                                   "openclip:ARCH[@PRETRAINED], hf:REPO_OR_DIR); without it that level is skipped")
    p.add_argument("--checkpoint", help="weights for a timm:ARCH --model")
    p.add_argument("--trust-checkpoint", action="store_true", help="allow full unpickling of the checkpoint")
    add_input_args(p)
    p.add_argument("--adv-eps", type=float, default=16 / 255, help="L-inf bound of the adversarial background (default 16/255)")
    p.add_argument("--adv-steps", type=int, default=10, help="ascent steps of the adversarial level (default %(default)s)")
    p.add_argument("--batch-size", type=int, default=32, help="images per adversarial batch (default %(default)s)")
    add_shard_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing edit of this split")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import console
    from ..api import edit
    from ..errors import BgbenchError
    from ..runs import record
    from ..store import Store
    for name in args.plugin:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise BgbenchError(f"--plugin {name}: cannot import it ({e})") from None
    model = None
    if args.model:
        from ..data.layout import class_folders
        from ..models import create_model
        model = create_model(args.model, checkpoint=args.checkpoint, trust_checkpoint=args.trust_checkpoint,
                             resize=args.resize, labels=args.labels, templates=args.templates,
                             classes=class_folders(args.data, args.split))
    result = edit(args.data, args.out, model=model, attributes=args.attributes, levels=args.levels,
                  angles=args.angles, split=args.split, seed=args.seed, workers=args.workers,
                  inpainter=args.inpainter, complexity_editor=args.complexity_editor, adv_eps=args.adv_eps,
                  adv_steps=args.adv_steps, batch_size=args.batch_size, overwrite=args.overwrite,
                  shard=args.shard, progress=not args.quiet)
    for why in result.skipped:
        console.status(f"skipped {why}")
    doc, text = result.outputs(), result.summary()
    if result.provenance is not None:  # a shard is recorded once merged, not before
        with Store(args.db) as store:
            doc["run_id"] = record(result, store)
        text += f"\nedit recorded as run {doc['run_id']}"
    emit(args, doc, text)
    return 0
