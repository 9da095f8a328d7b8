"""`bgbench merge-stores OUT STORE...`: the finished runs of several results stores (a cluster's
job stores, a laptop's and a workstation's) copied into one, each run once however often it is merged."""
from __future__ import annotations

import argparse

from .arguments import add_output_args
from .output import emit


def register(sub) -> None:
    p = sub.add_parser("merge-stores", help="merge results stores (one per cluster job, say) into one; a run the "
                                            "store already holds is not added again, so merging twice is harmless")
    p.add_argument("out", metavar="OUT", help="the results store to merge into (created when missing)")
    p.add_argument("stores", nargs="+", metavar="STORE", help="results stores to read")
    add_output_args(p, db=None)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..store import Store
    from ..store.merge import merge_store, open_source
    for path in args.stores:  # every input checked (read-only) before OUT is created or changed
        open_source(Path(path).expanduser(), path).close()
    counts = []
    with Store(args.out) as out:
        for path in args.stores:
            counts.append(merge_store(out, Path(path), path))
    doc = {"out": str(Path(args.out)), "added": sum(c.added for c in counts), "stores": [c.to_dict() for c in counts]}
    return emit(args, doc, "\n".join([c.text() for c in counts] + [f"{doc['added']} runs added to {args.out}"]))
