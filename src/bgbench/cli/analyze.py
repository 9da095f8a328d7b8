"""`bgbench analyze <analysis> RUN`: analyses of a stored run; no model is loaded, no inference."""
from __future__ import annotations

import importlib
from typing import List

#: Analysis modules (cli/analyze_<name>.py), in the order `bgbench analyze --help` lists them.
ANALYSES: List[str] = ["categories", "boxsize", "leakage"]


def register(sub) -> None:
    p = sub.add_parser("analyze", help="analyses of a stored eval run (categories, box size, leakage); no inference")
    inner = p.add_subparsers(dest="analysis", required=True, metavar="ANALYSIS")
    for name in ANALYSES:
        importlib.import_module(f"{__package__}.analyze_{name}").register(inner)
