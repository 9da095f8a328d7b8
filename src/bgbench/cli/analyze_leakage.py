"""`bgbench analyze leakage RUN`: ONLY-BG-B/ONLY-BG-T accuracy above chance (paper §5); NO-FG apart."""
from __future__ import annotations

import argparse

from .arguments import add_stored_run_args, stored_mapping

from .folders import open_store

from .output import emit


def register(sub, measure) -> None:
    p = sub.add_parser("leakage", help=measure.help.replace("%", "%%"))
    add_stored_run_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import leakage
    from ..console import status
    with open_store(args, create=False) as store:
        result = leakage(store, args.run, mapping=stored_mapping(store, args))
    if result.trained_on not in (None, "mixed_rand", "only_fg"):
        status(f"note: run {args.run}'s model was trained on {result.trained_on}; leakage is meant for models "
               f"trained on mixed_rand or only_fg, where background-only accuracy should be at chance")
    emit(args, result.to_dict(), result.text())
    return 0
