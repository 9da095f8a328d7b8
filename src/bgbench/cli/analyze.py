"""`bgbench analyze <analysis>`: analyses of stored runs, one per registered measure of command
'analyze' (`measures.registry`), listed in catalog order.

Each analysis has its argument module `analyze_<name>` (an analysis reads stored runs in its own
way: one eval run, several, a dataset's boxes): `register(sub)` adds its parser with the measure's
help, `run(args) -> int` does the work (heavy imports inside `run`).
"""
from __future__ import annotations

import importlib

from ..measures.registry import list_measures


def register(sub) -> None:
    p = sub.add_parser("analyze", help="analyses of stored runs (no new inference)")
    group = p.add_subparsers(dest="analysis", required=True, metavar="ANALYSIS")
    for measure in list_measures("analyze"):
        importlib.import_module(f"{__package__}.analyze_{measure.name}").register(group, measure)
