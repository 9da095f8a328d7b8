"""`bgbench synth`: write Synthetic-9, the offline dataset in the IN-9 layout."""
from __future__ import annotations

import argparse

from ..options import flagged_fields
from ..variants.synth import SynthConfig
from .arguments import add_config_flags, add_db_arg, add_output_args, add_shard_arg
from .output import emit, record_dataset_run


def register(sub) -> None:
    p = sub.add_parser("synth", help="write Synthetic-9 in the IN-9 layout (offline, exact masks and boxes)")
    shortcut = p.add_mutually_exclusive_group()
    for f, _ in flagged_fields(SynthConfig):
        add_config_flags(shortcut if f.name in ("bg_correlation", "correlation") else p, SynthConfig, only=(f.name,))
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
    given = {f.name: getattr(args, f.name) for f, _ in flagged_fields(SynthConfig) if getattr(args, f.name) is not None}
    result = build(preset=SYNTHETIC, shard=args.shard, overwrite=args.overwrite, progress=not args.quiet, **given)
    doc = result.outputs()
    record_dataset_run(args, result, doc, "synth")
    return emit(args, doc, result.text())
