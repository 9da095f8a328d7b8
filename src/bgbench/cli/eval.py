"""`bgbench eval`: accuracy per IN-9 variant with 95% intervals, and the BG-Gap."""
from __future__ import annotations

import argparse

from ..evaluation.config import EvalConfig
from ..variants.registry import IN9_VARIANTS, list_variants
from .common import (add_class_map_arg, add_db_arg, add_mapping_arg, add_model_args, add_output_args, add_seed_arg,
                     config_default, create_model, emit, open_store, stored_in)


def register(sub) -> None:
    p = sub.add_parser("eval", help="accuracy per IN-9 variant with 95%% intervals, and the BG-Gap")
    add_model_args(p, EvalConfig)
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout, or a RIVAL10 release (variant "
                                                  "original only)")
    p.add_argument("--variants", nargs="+", metavar="VARIANT",
                   help=f"variant folders to evaluate: {', '.join(list_variants())}, or edit levels such as "
                        f"size_0.05 (default: those of {', '.join(IN9_VARIANTS)} present; every folder when only "
                        f"original is, as in `bgbench edit` output)")
    add_mapping_arg(p, config_default(EvalConfig, "mapping"))
    add_class_map_arg(p)
    p.add_argument("--ten-crop", action="store_true", default=config_default(EvalConfig, "ten_crop"),
                   help="Resize(256), TenCrop(224) and average the logits of the ten crops (seed 003's test-time option)")
    add_seed_arg(p, config_default(EvalConfig, "seed"), "seed of the BG-Gap's bootstrap")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import evaluate
    from ..runs import record
    model = create_model(args)
    report = evaluate(model, args.data, variants=args.variants, mapping=args.mapping, batch_size=args.batch_size,
                      device=args.device, progress=not args.quiet, seed=args.seed, ten_crop=args.ten_crop,
                      class_map=args.class_map)
    with open_store(args) as store:
        record(report, store)
        stored_in(report.run_id, store.path)
    emit(args, report.to_dict(), report.table())
    return 0
