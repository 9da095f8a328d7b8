"""`bgbench <subcommand>`: one command for every job, one module per subcommand.

Each module in COMMANDS (a command's name, '-' spelled '_') has `register(subparsers)`, which adds
its parser, and `run(args) -> int`, which `build_parser` makes the parser's `func`; a command line that names its command registers
that command alone (`build_parser(only)`). Modules import torch, timm and the engines only inside `run`, so building
the parser (`bgbench --help`, `bgbench <cmd> --help`) stays cheap. User errors (BgbenchError)
print one line on stderr and exit with status 2; bugs keep their traceback. A reader that closes
the pipe early (`bgbench leaderboard --format csv | head`) ends the command quietly.
"""
from __future__ import annotations

import argparse
import contextlib
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
    "predict",
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
    "merge-stores",
    "models",
    "cache",
    "demo",
]


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `only` (a command's name) alone: a command line that names
    its command builds that command's parser, not every other's (`bgbench --help`, a mistyped
    command and `bgbench` alone still build them all, to list them)."""
    parser = argparse.ArgumentParser(
        prog="bgbench", description="Measure, and reduce, how much an image classifier relies on backgrounds.")
    parser.add_argument("--version", action="version", version=f"bgbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [only] if only in COMMANDS else COMMANDS:
        module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
        module.register(sub)
        sub.choices[name].set_defaults(func=module.run)
    return parser


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: What a byte that is not UTF-8 becomes in a command line (a surrogate escape), which SQLite cannot store.
_SURROGATE = re.compile("[\ud800-\udfff]")


def one_line(message: str) -> str:
    """A user error as one line: no terminal escape codes, no line breaks."""
    return " ".join(_ANSI.sub("", message).split())


def _stdout_closed() -> int:
    """Python's documented recipe for a closed pipe: point stdout at devnull so the interpreter's
    final flush cannot fail again, and exit quietly."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def parse(parser: argparse.ArgumentParser, argv: List[str]) -> argparse.Namespace:
    """Parse `argv`; a mistyped command or flag is reported by the subcommand it belongs to, with
    its usage and the closest name it has (argparse alone answers with the top-level usage)."""
    import difflib
    sub, flagged = parser, False  # the (sub)parser of the command `argv` names (`probe noise`), for its usage
    for token in argv:
        choices = _subparsers(sub)
        if not choices:
            break
        flagged = flagged or token.startswith("-")
        if token in choices:
            sub = choices[token]
        elif not flagged:  # a mistyped subcommand (before any flag): the closest one
            near = difflib.get_close_matches(token, list(choices), n=1)
            sub.error(f"unknown command {token!r}" + (f"; did you mean {near[0]!r}?" if near else
                                                       f" (choose from {', '.join(choices)})"))
    args, extra = parser.parse_known_args(argv)
    if extra:
        flags = [s for a in sub._actions for s in a.option_strings]
        near = {t: difflib.get_close_matches(t.split("=", 1)[0], flags, n=1, cutoff=0.75) for t in extra
                if t.startswith("-")}
        sub.error("unrecognized arguments: " + " ".join(f"{t} (did you mean {near[t][0]}?)" if near.get(t) else t
                                                        for t in extra))
    return args


#: Arguments that name an existing input path, checked before any heavy import (torch takes seconds).
INPUT_PATHS = ("data", "imagenet", "checkpoint", "class_map")


def _texts(args: argparse.Namespace, names):
    """(flag, text) of each text argument among `names`, a list's items one by one."""
    for name in names:
        value = getattr(args, name, None)
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                yield "--" + name.replace("_", "-"), text


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, before any work, a text argument that is not valid UTF-8 and a mistyped input path.

    The store keeps paths as SQLite text, which must be UTF-8; a folder name with a stray byte
    (`$'data\\xff'`) reaches Python as a surrogate escape and would fail only when the run is
    recorded, after all the work is done. A missing input is one line at once, not after the model
    library has loaded.
    """
    for flag, text in _texts(args, vars(args)):
        if _SURROGATE.search(text):
            raise BgbenchError(f"{flag}: {text.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8; "
                               f"rename it (bgbench stores paths as UTF-8 text)")
    for flag, text in _texts(args, INPUT_PATHS):
        if text and not os.path.exists(os.path.expanduser(text)):
            raise BgbenchError(f"{flag} {text}: no such file or folder")


@contextlib.contextmanager
def _no_cache(asked: bool):
    """--no-cache as `$BGBENCH_NO_CACHE=1` for the command's duration (an environment variable:
    the processes torchrun and the decoding pool start inherit it), then as it was."""
    before = os.environ.get("BGBENCH_NO_CACHE")
    if asked:
        os.environ["BGBENCH_NO_CACHE"] = "1"
    try:
        yield
    finally:
        if asked:
            if before is None:
                os.environ.pop("BGBENCH_NO_CACHE", None)
            else:
                os.environ["BGBENCH_NO_CACHE"] = before


def main(argv: Optional[List[str]] = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = parse(build_parser(argv[0] if argv else None), argv)  # inside: `bgbench --help | head` closes the pipe too
        check_arguments(args)
        with _no_cache(getattr(args, "no_cache", False)):
            code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler, not at exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("bgbench: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a user's error, or a store damaged outside `with Store(...)` (which names its path)
        from ..store.core import is_damage
        if not (isinstance(e, BgbenchError) or is_damage(e)):
            raise
        message = str(e) if isinstance(e, BgbenchError) else \
            f"a results store cannot be read ({e}): it is damaged or not a results store"
        print(f"bgbench: error: {one_line(message)}", file=sys.stderr)
        return 2
