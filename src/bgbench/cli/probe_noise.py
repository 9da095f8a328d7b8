"""`bgbench probe noise`: accuracy under foreground-only and background-only noise, and RFS;
with `--region attributes`, under noise on each attribute's mask alone."""
from __future__ import annotations

import argparse

from ..measures.noise.probe import KINDS, REGION_CHOICES, NoiseConfig
from .common import (add_class_map_arg, add_data_arg, add_db_arg, add_mapping_arg, add_model_args, add_output_args,
                     add_seed_arg, config_default, create_model, emit, open_store, stored_in)


def register(sub) -> None:
    p = sub.add_parser("noise", help="Gaussian noise on the foreground vs the background: accuracy curves and RFS")
    add_model_args(p, NoiseConfig)
    add_data_arg(p)
    p.add_argument("--region", choices=REGION_CHOICES, default=config_default(NoiseConfig, "region"),
                   help="object: noise on the foreground, then on the background; attributes: also on each "
                        "attribute's mask alone, on the images that have it (needs attribute masks: Synthetic-9 "
                        "or RIVAL10) (default %(default)s)")
    p.add_argument("--noise", choices=KINDS, default=config_default(NoiseConfig, "kind"),
                   help="sigma: Gaussian noise of per-pixel std σ on the region; l2: Gaussian noise scaled to an "
                        "L2 norm over the region (all channels, pixel values in [0,1]) (default %(default)s)")
    p.add_argument("--levels", nargs="+", metavar="GRID|V",
                   help="a grid, rival10 (σ 30/255..210/255 in steps of 30/255; L2 25..200 in steps of 25) or "
                        "hardimagenet (σ 0.125..0.75; L2 30..180), or explicit levels such as 0.25 0.5 or 30/255 "
                        "(default: rival10); an overall RFS compares only within one grid")
    p.add_argument("--trials", type=int, default=config_default(NoiseConfig, "trials"),
                   help="seeded noise draws per image and level (default %(default)s)")
    add_seed_arg(p, config_default(NoiseConfig, "seed"),
                 "seed of the noise and of the bootstrap over images behind the intervals")
    add_mapping_arg(p, config_default(NoiseConfig, "mapping"))
    add_class_map_arg(p)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..measures.noise.probe import noise_summary
    from ..api import probe_noise
    from ..recording import record
    result = probe_noise(create_model(args), args.data, levels=args.levels, kind=args.noise, trials=args.trials,
                         batch_size=args.batch_size, device=args.device, seed=args.seed, mapping=args.mapping,
                         region=args.region, class_map=args.class_map, progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0: rank 0 records and reports
        return 0
    with open_store(args) as store:
        run_id = record(result, store)
        summary = noise_summary(store, run_id)
        stored_in(run_id, store.path)
    emit(args, {"run_id": run_id, **summary.to_dict()}, summary.table())
    return 0
