"""`bgbench merge`: join the folders of `--shard K/N` runs (synth, build, edit) into one dataset."""
from __future__ import annotations

import argparse
import importlib

from .arguments import add_output_args

from .output import emit

#: The job that wrote a shard -> the function that joins its shards.
MERGERS = {"synth": "bgbench.variants.synth", "build": "bgbench.variants.build", "edit": "bgbench.edits.pipeline"}


def register(sub) -> None:
    p = sub.add_parser("merge", help="join the shard folders of `synth`, `build` or `edit --shard K/N` runs into one "
                                     "dataset, byte-identical to an unsharded run")
    p.add_argument("out", metavar="OUT", help="dataset root to write (not one of the shard folders)")
    p.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="the --out folders of all N shards")
    p.add_argument("--workers", type=int, default=1,
                   help="worker processes for build's mixed variants (the output does not depend on it)")
    p.add_argument("--overwrite", action="store_true", help="replace splits that OUT already holds")
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .. import checks, recording
    from ..data.shards import read_shards
    from ..data.writer import refuse_merge_into_a_shard
    from ..errors import BgbenchError
    from ..store import Store
    checks.at_least("--workers", args.workers, 1)
    refuse_merge_into_a_shard(Path(args.out), [Path(d) for d in args.shards])
    by_split = read_shards([Path(d) for d in args.shards])
    doc = {"out": str(Path(args.out)), "splits": {}}
    lines = []
    for split, records in by_split.items():
        kind = records[0].kind
        if kind not in MERGERS:
            raise BgbenchError(f"{records[0].root}: a shard of {kind!r}, which merge does not know")
        merge = importlib.import_module(MERGERS[kind]).merge
        result = merge(Path(args.out).expanduser(), records, overwrite=args.overwrite, workers=args.workers,
                       progress=not args.quiet)
        entry = {"kind": kind, "shards": len(records), **result.outputs()}
        text = result.text()
        if getattr(result, "provenance", None) is not None:
            with Store(args.db) as store:
                entry["run_id"] = recording.record(result, store)
            text += f"\n{kind} recorded as run {entry['run_id']}"
        doc["splits"][split] = entry
        lines.append(f"merged {len(records)} shards of {kind} ({split}) into {args.out}\n{text}")
    return emit(args, doc, "\n".join(lines))
