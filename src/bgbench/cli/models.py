"""`bgbench models`: list model strings."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("models", help="list model strings (zoo and timm architectures)")
    p.add_argument("pattern", nargs="?", default="zoo:*", help="fnmatch pattern, e.g. 'timm:resnet*' (default zoo:*)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..models import list_models
    names = list_models(args.pattern)
    for name in names:
        print(name)
    if not names:
        from ..console import status
        status(f"no model matches {args.pattern!r}; try 'timm:*' or 'zoo:*'")
    return 0
