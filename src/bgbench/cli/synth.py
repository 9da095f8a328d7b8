"""`bgbench synth`: write Synthetic-9, the offline dataset in the IN-9 layout."""
from __future__ import annotations

import argparse

from .common import add_output_args, add_shard_arg, emit


def register(sub) -> None:
    p = sub.add_parser("synth", help="write Synthetic-9 in the IN-9 layout (offline, exact masks and boxes)")
    p.add_argument("--out", required=True, help="dataset root to write")
    p.add_argument("--size", type=int, default=64, help="image side in pixels (default %(default)s)")
    p.add_argument("--per-class", type=int, default=50, help="images per class (default %(default)s)")
    p.add_argument("--split", choices=["train", "val"], default="val")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bg-correlation", type=float, default=0.95,
                   help="probability that the background texture matches the class (default %(default)s)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (the output does not depend on it)")
    add_shard_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing split in --out")
    add_output_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..data.shards import Shard
    from ..variants.synth import SynthConfig, synth
    cfg = SynthConfig(out=Path(args.out), per_class=args.per_class, size=args.size, seed=args.seed, split=args.split,
                      bg_correlation=args.bg_correlation, workers=args.workers,
                      shard=Shard.parse(args.shard) if args.shard else None, overwrite=args.overwrite)
    result = synth(cfg, progress=not args.quiet)
    emit(args, result.outputs(), result.summary())
    return 0
