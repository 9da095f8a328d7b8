"""`bgbench synth`: write Synthetic-9, the offline dataset in the IN-9 layout."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("synth", help="write Synthetic-9 in the IN-9 layout (offline, exact masks and boxes)")
    p.add_argument("--out", required=True, help="dataset root to write")
    p.add_argument("--size", type=int, default=64, help="image side in pixels (default %(default)s)")
    p.add_argument("--per-class", type=int, default=50, help="images per class (default %(default)s)")
    p.add_argument("--split", choices=["train", "val"], default="val")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bg-correlation", type=float, default=0.95,
                   help="probability that the background texture matches the class (default %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data.synthetic import write_dataset
    out = write_dataset(args.out, per_class=args.per_class, size=args.size, seed=args.seed, split=args.split,
                        bg_correlation=args.bg_correlation, progress=not args.quiet)
    print(f"wrote Synthetic-9 ({args.split}, {9 * args.per_class} images x 8 variants + fg_mask) to {out}")
    return 0
