"""`bgbench models`: list model strings."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("models", help="list model strings (zoo, timm and open_clip architectures) or the schemes")
    p.add_argument("pattern", nargs="?", default="zoo:*", help="fnmatch pattern, e.g. 'timm:resnet*' (default zoo:*)")
    p.add_argument("--schemes", action="store_true",
                   help="list the model schemes (the forms a model string takes) instead of model names")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..models import list_models
    if args.schemes:
        return _schemes()
    names = list_models(args.pattern)
    for name in names:
        print(name)
    if not names:
        from ..console import status
        status(f"no model matches {args.pattern!r}; try 'timm:*' or 'zoo:*'")
    return 0


def _schemes() -> int:
    """One line per registered scheme: its usage, and what it is."""
    from ..models.registry import SCHEMES
    for scheme in SCHEMES.values():
        listed = f"  (names: bgbench models '{scheme.name}:*')" if scheme.names is not None else ""
        print(f"{scheme.usage:<28} {scheme.summary}{listed}")
    return 0
