"""`bgbench synth`: write Synthetic-9, the offline dataset in the IN-9 layout."""
from __future__ import annotations

import argparse

from ..signatures import default_of
from ..variants.synth import SynthConfig
from .arguments import add_db_arg, add_output_args, add_seed_arg, add_shard_arg
from .output import emit, record_dataset_run


def _default(name: str):
    return default_of(SynthConfig, name)


def register(sub) -> None:
    from ..data.synthetic import SYNTH_CLASSES
    p = sub.add_parser("synth", help="write Synthetic-9 in the IN-9 layout (offline, exact masks and boxes)")
    p.add_argument("--out", required=True, help="dataset root to write")
    p.add_argument("--size", type=int, default=_default("size"), help="image side in pixels (default %(default)s)")
    p.add_argument("--per-class", type=int, default=_default("per_class"),
                   help="images per class (default %(default)s)")
    p.add_argument("--split", choices=["train", "val"], default=_default("split"),
                   help="split folder to write (default %(default)s); train and val draw from independent seeds")
    add_seed_arg(p, _default("seed"), "seed of the generator")
    shortcut = p.add_mutually_exclusive_group()
    shortcut.add_argument("--bg-correlation", type=float, default=_default("bg_correlation"),
                          help="probability that the background texture matches the class (default %(default)s)")
    shortcut.add_argument("--correlation", type=float, metavar="P",
                          help="a controlled shortcut: exactly a share P of each class's images on its own "
                               "class's background family, the rest on the other families in turn (minority "
                               "groups, as in Waterbirds); the manifest records each ORIGINAL image's group")
    p.add_argument("--watermark-correlation", type=float, metavar="Q",
                   help="a second, controlled shortcut (Whac-A-Mole's watermark): a share Q of --watermark-class's "
                        "images carry ImageNet-W's watermark (the imagenet-w package's), on every variant; "
                        "SYNTHETIC9.json records it, and `bgbench probe watermark` reads its Carton gap on that class")
    p.add_argument("--watermark-class", choices=SYNTH_CLASSES, default=None,
                   help=f"with --watermark-correlation: the class the watermark marks (default "
                        f"{_default('watermark_class')})")
    p.add_argument("--workers", type=int, default=_default("workers"),
                   help="worker processes (the output does not depend on it; default %(default)s)")
    add_shard_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing split in --out")
    add_db_arg(p, help="SQLite results store where the dataset's generation is recorded, as build and edit "
                       "record theirs (default: $BGBENCH_DB if set, else ~/.bgbench/results.db)")
    add_output_args(p, quiet_help="no progress bars", db=None)


def run(args: argparse.Namespace) -> int:
    from ..api import SYNTHETIC, build
    from ..errors import BgbenchError
    if args.watermark_class is not None and args.watermark_correlation is None:
        raise BgbenchError(f"--watermark-class {args.watermark_class} marks no image without --watermark-correlation Q "
                           f"(the share of its images that carry the watermark); give both, or neither")
    if args.watermark_class is None:
        args.watermark_class = _default("watermark_class")
    result = build(args.out, preset=SYNTHETIC, per_class=args.per_class, size=args.size, seed=args.seed,
                   split=args.split, bg_correlation=args.bg_correlation, correlation=args.correlation,
                   watermark_correlation=args.watermark_correlation, watermark_class=args.watermark_class,
                   workers=args.workers, shard=args.shard,
                   overwrite=args.overwrite, progress=not args.quiet)
    doc = result.outputs()
    record_dataset_run(args, result, doc, "synth")
    return emit(args, doc, result.text())
