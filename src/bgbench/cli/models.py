"""`bgbench models`: list model strings."""
from __future__ import annotations

import argparse

from .common import add_json_arg, emit


def register(sub) -> None:
    p = sub.add_parser("models", help="list model strings (zoo and timm architectures)")
    p.add_argument("pattern", nargs="?", default="zoo:*", help="fnmatch pattern, e.g. 'timm:resnet*' (default zoo:*)")
    add_json_arg(p, help="print the names as one JSON list")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..models import list_models
    names = list_models(args.pattern)
    if not names:
        from ..console import status
        status(f"no model matches {args.pattern!r}; try 'timm:*' or 'zoo:*'")
    if names or args.json:
        emit(args, names, "\n".join(names))
    return 0
