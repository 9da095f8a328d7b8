"""`bgbench analyze categories RUN`: the paper's Table 3 from stored predictions."""
from __future__ import annotations

import argparse

from ..classes import Mapping
from .common import add_db_arg, add_output_args, emit


def add_run_args(p: argparse.ArgumentParser) -> None:
    """RUN, --mapping (re-decide a 1000-class run from its stored outputs), --db, --json."""
    p.add_argument("run", type=int, help="id of a stored eval run (see `bgbench runs`)")
    p.add_argument("--mapping", choices=[m.value for m in Mapping],
                   help="1000-class runs: re-decide under this mapping from the stored top-5 and superclass "
                        "sums (default: the run's own decisions)")
    add_output_args(p)
    add_db_arg(p)


def register(sub) -> None:
    p = sub.add_parser("categories", help="BG Irrelevant / Required / Fools ... per class (paper Table 3)")
    add_run_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analyses.categories import prediction_categories
    from ..store import Store
    with Store(args.db) as store:
        result = prediction_categories(store, args.run, mapping=args.mapping)
    emit(args, result.to_dict(), result.table())
    return 0
