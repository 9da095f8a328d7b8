"""`bgbench probe saliency`: Grad-CAM alignment with the object mask (RIVAL10's measures), by
predicted class, with an overlay PNG of the most and least aligned images."""
from __future__ import annotations

import argparse

from ..measures.saliency.probe import SaliencyConfig
from .common import (add_class_map_arg, add_data_arg, add_db_arg, add_model_args, add_output_args, add_seed_arg,
                     config_default, create_model, emit, open_store, run_output_dir, stored_in)


def register(sub) -> None:
    p = sub.add_parser("saliency", help="Grad-CAM on the predicted class: RIVAL10's alignment with the mask "
                                        "(precision, IoU, Dice, Δdensity, coverage, AP)")
    add_model_args(p, SaliencyConfig)
    add_data_arg(p)
    p.add_argument("--layer", help="Grad-CAM layer, a module path inside the network (default: a ViT's last block's "
                                   "norm1, else the last feature stage of a timm model, else the last convolution)")
    p.add_argument("--examples", type=int, default=config_default(SaliencyConfig, "examples"),
                   help="overlay images per predicted class: the most, then the least aligned by precision; "
                        "0: no PNG (default %(default)s)")
    p.add_argument("--out", help="folder for saliency_overlays.png and saliency_examples/ (one overlay PNG per "
                                 "example, which the report shows; default: a new probe_saliency_<time>/ beside "
                                 "the results store)")
    add_seed_arg(p, config_default(SaliencyConfig, "seed"), "seed of the bootstrap over images behind the intervals")
    add_class_map_arg(p)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import probe_saliency
    from ..distributed import launched
    from ..recording import record
    model = create_model(args)

    def compute(out_dir):
        return probe_saliency(model, args.data, layer=args.layer, batch_size=args.batch_size, device=args.device,
                              examples=args.examples, seed=args.seed, class_map=args.class_map, out_dir=out_dir,
                              progress=not args.quiet)
    if not launched().main:  # a torchrun rank other than 0 computes its share; rank 0 writes, records, reports
        compute(None)
        return 0
    with open_store(args) as store:
        with run_output_dir(args.out, store.path, "probe_saliency", writes=args.examples > 0) as out_dir:
            result = compute(out_dir)
        run_id = record(result, store)
        stored_in(run_id, store.path)
    emit(args, result.to_dict(), result.table())
    return 0
