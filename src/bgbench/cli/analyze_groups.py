"""`bgbench analyze groups RUN`: accuracy per (class, background class) group of a mixed variant,
the worst group and the mean over groups."""
from __future__ import annotations

import argparse

from .arguments import add_stored_run_args
from .folders import open_store
from .output import emit


def register(sub, measure) -> None:
    from ..measures.groups.stored import MIXED
    from ..measures.groups.summary import MIN_IMAGES
    p = sub.add_parser("groups", help=measure.help.replace("%", "%%"))
    add_stored_run_args(p)
    p.add_argument("--variant", choices=(*MIXED, "original"),
                   help="the mixed variant whose images are grouped by their background's class (default mixed_rand; "
                        "a group dataset's run: original, its groups)")
    p.add_argument("--min-images", type=int, default=MIN_IMAGES,
                   help="images a group needs to be named the worst (default %(default)s)")
    p.add_argument("--data", help="dataset root with the manifest (default: the run's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import checks
    from ..api import worst_group
    from .arguments import stored_mapping
    checks.at_least("--min-images", args.min_images, 1)
    with open_store(args, create=False) as store:
        result = worst_group(store, args.run, variant=args.variant, data=args.data,
                             mapping=stored_mapping(store, args), min_images=args.min_images)
    emit(args, result.to_dict(), result.text())
    return 0
