"""`bgbench probe ablate`: the object, the background and each attribute replaced by gray (RIVAL10);
the drop in accuracy and in true-class probability, per region and per class."""
from __future__ import annotations

import argparse

from ..measures.ablation.probe import AblateConfig
from .common import (add_class_map_arg, add_data_arg, add_db_arg, add_mapping_arg, add_model_args, add_output_args,
                     add_seed_arg, config_default, create_model, emit, open_store, stored_in)


def register(sub) -> None:
    p = sub.add_parser("ablate", help="gray out the object, the background and each attribute: accuracy and "
                                      "true-class probability drops, per region and class")
    add_model_args(p, AblateConfig)
    add_data_arg(p, "original/ and fg_mask/ (and attr_mask/ for attributes)")
    add_seed_arg(p, config_default(AblateConfig, "seed"), "seed of the bootstrap over images behind the intervals")
    add_mapping_arg(p, config_default(AblateConfig, "mapping"))
    add_class_map_arg(p)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import probe_ablate
    from ..recording import record
    result = probe_ablate(create_model(args), args.data, batch_size=args.batch_size, device=args.device,
                          seed=args.seed, mapping=args.mapping, class_map=args.class_map, progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0: rank 0 records and reports
        return 0
    with open_store(args) as store:
        run_id = record(result, store)
        stored_in(run_id, store.path)
    emit(args, result.to_dict(), result.table())
    return 0
