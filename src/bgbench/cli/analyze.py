"""`bgbench analyze <analysis>`: analyses of stored runs, one submodule per analysis.

Each module `analyze_<name>` in ANALYSES follows the subcommand protocol: `register(sub)` adds
its parser to the group, `run(args) -> int` does the work (heavy imports inside `run`).
"""
from __future__ import annotations

import importlib
from typing import List

#: Analysis submodules (cli/analyze_<name>.py), in the order `bgbench analyze --help` lists them.
ANALYSES: List[str] = ["categories", "boxsize", "leakage", "edits"]


def register(sub) -> None:
    p = sub.add_parser("analyze", help="analyses of stored runs (no new inference)")
    group = p.add_subparsers(dest="analysis", required=True, metavar="ANALYSIS")
    for name in ANALYSES:
        importlib.import_module(f"{__package__}.analyze_{name}").register(group)
