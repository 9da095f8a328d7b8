"""`bgbench synth`: write Synthetic-9, the offline dataset in the IN-9 layout."""
from __future__ import annotations

import argparse

from ..data.synthetic import write_dataset
from .common import add_output_args, add_seed_arg, emit, param_default


def register(sub) -> None:
    p = sub.add_parser("synth", help="write Synthetic-9 in the IN-9 layout (offline, exact masks and boxes)")
    p.add_argument("--out", required=True, help="dataset root to write")
    p.add_argument("--size", type=int, default=param_default(write_dataset, "size"),
                   help="image side in pixels (default %(default)s)")
    p.add_argument("--per-class", type=int, default=param_default(write_dataset, "per_class"),
                   help="images per class (default %(default)s)")
    p.add_argument("--split", choices=["train", "val"], default=param_default(write_dataset, "split"),
                   help="split folder to write (default %(default)s); train and val draw from independent seeds")
    add_seed_arg(p, param_default(write_dataset, "seed"), "seed of the generator")
    p.add_argument("--bg-correlation", type=float, default=param_default(write_dataset, "bg_correlation"),
                   help="probability that the background texture matches the class (default %(default)s)")
    add_output_args(p, quiet_help="no progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = write_dataset(args.out, per_class=args.per_class, size=args.size, seed=args.seed, split=args.split,
                        bg_correlation=args.bg_correlation, progress=not args.quiet)
    images = 9 * args.per_class
    doc = {"out": str(out), "split": args.split, "images": images, "size": args.size, "seed": args.seed,
           "bg_correlation": args.bg_correlation}
    emit(args, doc, f"wrote Synthetic-9 ({args.split}, {images} images x 8 variants + fg_mask) to {out}")
    return 0
