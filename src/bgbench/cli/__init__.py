"""`bgbench <subcommand>`: one command for every job, one module per subcommand.

Each module in COMMANDS has `register(subparsers)`, which adds its parser and sets `func` to its
`run(args) -> int`. Modules import torch, timm and the engines only inside `run`, so building
the parser (`bgbench --help`, `bgbench <cmd> --help`) stays cheap. User errors (BgbenchError)
print one line on stderr and exit with status 2; bugs keep their traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from ..errors import BgbenchError
from ..version import __version__

#: Subcommand modules, in the order `bgbench --help` lists them.
COMMANDS: List[str] = [
    "eval",
    "challenge",
    "analyze",
    "compare",
    "probe",
    "leaderboard",
    "report",
    "runs",
    "export",
    "train",
    "build",
    "edit",
    "synth",
    "merge",
    "models",
    "demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bgbench", description="Measure, and reduce, how much an image classifier relies on backgrounds.")
    parser.add_argument("--version", action="version", version=f"bgbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BgbenchError as e:
        print(f"bgbench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bgbench: interrupted", file=sys.stderr)
        return 130
