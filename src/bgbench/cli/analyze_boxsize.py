"""`bgbench analyze boxsize RUN`: accuracy by the foreground box's share of the image (Fig. 14)."""
from __future__ import annotations

import argparse

from ..variants.registry import list_variants
from .analyze_categories import add_run_args
from .common import emit


def register(sub) -> None:
    p = sub.add_parser("boxsize", help="accuracy per variant in quantile bins of box size (paper Fig. 14)")
    add_run_args(p)
    p.add_argument("--variants", nargs="+", default=["only_bg_t"], choices=list_variants(), metavar="VARIANT",
                   help="variants to bin (default: only_bg_t)")
    p.add_argument("--bins", type=int, default=5, help="number of quantile bins (default %(default)s)")
    p.add_argument("--data", help="dataset root for the boxes (default: the run's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analyses.boxsize import box_size_curve
    from ..store import Store
    with Store(args.db) as store:
        result = box_size_curve(store, args.run, variants=args.variants, bins=args.bins, data=args.data,
                                mapping=args.mapping)
    emit(args, {"run_id": result.run_id, "box_source": result.box_source, "curves": result.to_dict()},
         result.table())
    return 0
