"""`bgbench probe attribution`: per attribute, the penultimate-layer features whose activation maps
best overlap its mask (RIVAL10's feature attribution)."""
from __future__ import annotations

import argparse

from ..measures.attribution.probe import AttributionConfig
from .common import (add_data_arg, add_db_arg, add_model_args, add_output_args, add_seed_arg, config_default,
                     create_model, emit, open_store, stored_in)


def register(sub) -> None:
    p = sub.add_parser("attribution", help="per attribute, the features whose maps best overlap its mask (IoU at "
                                           "0.5 of the map's max), per class and over all classes")
    add_model_args(p, AttributionConfig)
    add_data_arg(p, "original/, fg_mask/ and attr_mask/")
    p.add_argument("--top", type=int, default=config_default(AttributionConfig, "top"),
                   help="features kept per attribute and class, and over all classes (default %(default)s)")
    add_seed_arg(p, config_default(AttributionConfig, "seed"), "seed of the bootstrap over images behind the intervals")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import probe_attribution
    from ..recording import record
    result = probe_attribution(create_model(args), args.data, top=args.top, batch_size=args.batch_size,
                               device=args.device, seed=args.seed, progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0: rank 0 records and reports
        return 0
    with open_store(args) as store:
        run_id = record(result, store)
        stored_in(run_id, store.path)
    emit(args, {"run_id": run_id, **result.to_dict()}, result.table())
    return 0
