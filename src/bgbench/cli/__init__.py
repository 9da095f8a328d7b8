"""`bgbench <subcommand>`: one command for every job, one module per subcommand.

Each module in COMMANDS has `register(subparsers)`, which adds its parser and sets `func` to its
`run(args) -> int`. Modules import torch, timm and the engines only inside `run`, so building
the parser (`bgbench --help`, `bgbench <cmd> --help`) stays cheap. User errors (BgbenchError)
print one line on stderr and exit with status 2; bugs keep their traceback. A reader that closes
the pipe early (`bgbench leaderboard --format csv | head`) ends the command quietly.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from typing import List, Optional

from ..errors import BgbenchError
from ..version import __version__

#: Subcommand modules, in the order `bgbench --help` lists them.
COMMANDS: List[str] = [
    "profile",
    "study",
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


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def one_line(message: str) -> str:
    """A user error as one line: no terminal escape codes, no line breaks."""
    return " ".join(_ANSI.sub("", message).split())


def check_utf8_arguments(args: argparse.Namespace) -> None:
    """Refuse, before any work, a path (or other text) argument that is not valid UTF-8.

    The store keeps paths as SQLite text, which must be UTF-8; a folder name with a stray byte
    (`$'data\\xff'`) reaches Python as a surrogate escape and would fail only when the run is
    recorded, after all the work is done.
    """
    for name, value in vars(args).items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    flag = "--" + name.replace("_", "-")
                    raise BgbenchError(f"{flag}: {text.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8; "
                                       f"rename it (bgbench stores paths as UTF-8 text)") from None


def _stdout_closed() -> int:
    """Python's documented recipe for a closed pipe: point stdout at devnull so the interpreter's
    final flush cannot fail again, and exit quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        pass
    return 1


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)  # inside: `bgbench --help | head` closes the pipe too
        check_utf8_arguments(args)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler, not at exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except BgbenchError as e:
        print(f"bgbench: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bgbench: interrupted", file=sys.stderr)
        return 130
