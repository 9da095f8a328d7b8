"""`bgbench analyze categories RUN`: the paper's Table 3 from stored predictions."""
from __future__ import annotations

import argparse

from .arguments import add_stored_run_args, stored_mapping

from .folders import open_store

from .output import emit


def register(sub, measure) -> None:
    p = sub.add_parser("categories", help=measure.help.replace("%", "%%"))
    add_stored_run_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import prediction_categories
    with open_store(args, create=False) as store:
        result = prediction_categories(store, args.run, mapping=stored_mapping(store, args))
    emit(args, result.to_dict(), result.text())
    return 0
