"""`bgbench analyze boxsize RUN`: accuracy by the foreground box's share of the image (Fig. 14)."""
from __future__ import annotations

import argparse

from ..api import box_size
from ..variants.registry import list_variants
from .arguments import add_stored_run_args, param_default, stored_mapping
from .folders import open_store
from .output import emit


def register(sub, measure) -> None:
    p = sub.add_parser("boxsize", help=measure.help.replace("%", "%%"))
    add_stored_run_args(p)
    p.add_argument("--variants", nargs="+", default=list(param_default(box_size, "variants")),
                   choices=list_variants(), metavar="VARIANT", help="variants to bin (default: %(default)s)")
    p.add_argument("--bins", type=int, default=param_default(box_size, "bins"),
                   help="number of quantile bins (default %(default)s)")
    p.add_argument("--data", help="dataset root for the boxes (default: the run's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args, create=False) as store:
        result = box_size(store, args.run, variants=args.variants, bins=args.bins, data=args.data,
                          mapping=stored_mapping(store, args))
    emit(args, {"run_id": result.run_id, "box_source": result.box_source, "curves": result.to_dict()},
         result.text())
    return 0
