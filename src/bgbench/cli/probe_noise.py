"""`bgbench probe noise`: accuracy under foreground-only and background-only noise, and RFS."""
from __future__ import annotations

import argparse

from .common import add_db_arg, add_mapping_arg, add_model_args, add_output_args, create_model, emit


def register(sub) -> None:
    p = sub.add_parser("noise", help="Gaussian noise on the foreground vs the background: accuracy curves and RFS")
    add_model_args(p)
    p.add_argument("--data", required=True, help="dataset root with original/ and fg_mask/")
    p.add_argument("--noise", choices=("sigma", "l2"), default="sigma",
                   help="sigma: per-pixel std 0.125..0.75; l2: noise of L2 norm 30..180 on the region "
                        "(default %(default)s)")
    p.add_argument("--levels", type=float, nargs="+", help="noise levels (default: the six of the chosen --noise)")
    p.add_argument("--trials", type=int, default=3, help="seeded noise draws per level (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the noise (default %(default)s)")
    add_mapping_arg(p)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analyses.noise import noise_summary
    from ..api import probe_noise
    from ..runs import record
    from ..store import Store
    result = probe_noise(create_model(args), args.data, levels=args.levels, kind=args.noise, trials=args.trials,
                         batch_size=args.batch_size, device=args.device, seed=args.seed, mapping=args.mapping,
                         progress=not args.quiet)
    with Store(args.db) as store:
        run_id = record(result, store)
        summary = noise_summary(store, run_id)
        where = store.path
    emit(args, {"run_id": run_id, **summary.to_dict()}, f"{summary.table()}\nrun {run_id} stored in {where}")
    return 0
