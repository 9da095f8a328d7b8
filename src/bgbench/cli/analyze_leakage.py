"""`bgbench analyze leakage RUN`: ONLY-BG-B/ONLY-BG-T accuracy above chance (paper §5); NO-FG apart."""
from __future__ import annotations

import argparse

from .analyze_categories import add_run_args
from .common import emit


def register(sub) -> None:
    p = sub.add_parser("leakage", help="only_bg_b/only_bg_t accuracy above chance (box leakage), for models "
                                       "trained on MIXED-RAND or ONLY-FG; no_fg apart, as silhouette signal")
    add_run_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analyses.leakage import leakage
    from ..console import status
    from ..store import Store
    with Store(args.db) as store:
        result = leakage(store, args.run, mapping=args.mapping)
    if result.trained_on not in (None, "mixed_rand", "only_fg"):
        status(f"note: run {args.run}'s model was trained on {result.trained_on}; leakage is meant for models "
               f"trained on mixed_rand or only_fg, where background-only accuracy should be at chance")
    emit(args, result.to_dict(), result.table())
    return 0
