"""`bgbench probe features`: spurious-feature discovery (RIVAL10 §5 after Salient ImageNet): each
class's top penultimate features, the share of their activation maps on the background, and a
heatmap gallery per class."""
from __future__ import annotations

import argparse

from ..measures.features.probe import GROUPINGS, FeaturesConfig
from .common import (add_db_arg, add_model_args, add_output_args, config_default, create_model, emit, open_store,
                     run_output_dir, stored_in)


def register(sub) -> None:
    p = sub.add_parser("features", help="spurious features: each class's top penultimate features (weight x mean "
                                        "activation) and the share of their activation maps on the background")
    add_model_args(p, FeaturesConfig)
    p.add_argument("--data", required=True, help="dataset root with original/ and fg_mask/")
    p.add_argument("--top-features", type=int, default=config_default(FeaturesConfig, "top_features"),
                   help="features per class, by contribution to its logit (default %(default)s)")
    p.add_argument("--top-images", type=int, default=config_default(FeaturesConfig, "top_images"),
                   help="each feature's most activating images of the class, whose maps are measured "
                        "(default %(default)s)")
    p.add_argument("--group-by", choices=GROUPINGS, default=config_default(FeaturesConfig, "group_by"),
                   help="a class's images: those predicted as it (Salient ImageNet's) or those labelled so "
                        "(default %(default)s)")
    p.add_argument("--threshold", type=float, default=config_default(FeaturesConfig, "threshold"),
                   help="a feature is a spurious candidate when the mean background share of its maps exceeds this "
                        "share (default: the background's area share on the same images, i.e. the map is "
                        "denser on the background than on the object)")
    p.add_argument("--galleries", type=int, default=config_default(FeaturesConfig, "galleries"),
                   help="classes with a heatmap PNG, the largest first; 0: no PNG (default %(default)s)")
    p.add_argument("--out", help="folder for the heatmap PNGs (default: a new probe_features_<time>/ beside the "
                                 "results store)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import probe_features
    from ..recording import record
    model = create_model(args)
    with open_store(args) as store:
        with run_output_dir(args.out, store.path, "probe_features", writes=args.galleries > 0) as out_dir:
            result = probe_features(model, args.data, top_features=args.top_features, top_images=args.top_images,
                                    group_by=args.group_by, threshold=args.threshold, galleries=args.galleries,
                                    batch_size=args.batch_size, device=args.device, out_dir=out_dir,
                                    progress=not args.quiet)
        run_id = record(result, store)
        stored_in(run_id, store.path)
    emit(args, result.to_dict(), result.table())
    return 0
