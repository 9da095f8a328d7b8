"""`bgbench models`: list model strings."""
from __future__ import annotations

import argparse

from .arguments import add_json_arg

from .output import emit


def register(sub) -> None:
    p = sub.add_parser("models", help="list model strings (zoo, timm and open_clip architectures) or the schemes")
    p.add_argument("pattern", nargs="?", default="zoo:*", help="fnmatch pattern, e.g. 'timm:resnet*' (default zoo:*)")
    p.add_argument("--schemes", action="store_true",
                   help="list the model schemes (the forms a model string takes) instead of model names")
    add_json_arg(p, help="print the names (or, with --schemes, the schemes) as one JSON list")


def run(args: argparse.Namespace) -> int:
    from ..models import list_models
    if args.schemes:  # one line per registered scheme, its usage and what it is, then the file formats it
        # reads, each with what a job can do with it (`models.checkpoint`)
        from ..models.checkpoint import FORMATS, can_do, formats_of
        from ..models.options import schemes
        doc = [{"scheme": s.name, "usage": s.usage, "summary": s.summary, "lists_names": s.names is not None,
                "runnable": s.runnable,
                "formats": [{"format": f.name, "summary": f.summary, "layers": f.layers, "gradients": f.gradients}
                            for f in formats_of(s.name)]} for s in schemes().values()]
        return emit(args, doc, "\n".join(
            line for d in doc for line in [
                f"{d['usage']:<28} {d['summary']}" + (f"  (names: bgbench models '{d['scheme']}:*')"
                                                      if d["lists_names"] else ""),
                *(f"    {f['format']:<13} {f['summary']} [{can_do(FORMATS[f['format']])}]" for f in d["formats"])]))
    names = list_models(args.pattern)
    if not names:
        from ..console import status
        status(f"no model matches {args.pattern!r}; try 'timm:*' or 'zoo:*'")
    return emit(args, names, "\n".join(names)) if names or args.json else 0
