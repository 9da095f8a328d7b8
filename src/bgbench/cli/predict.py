"""`bgbench predict --model M PATH...`: what a model sees in your own photos: each image's top
classes by name with their probabilities, and the IN-9 class (or `--class-map` folder) each maps to."""
from __future__ import annotations

import argparse

from ..api import predict
from .arguments import add_json_arg, add_model_args, load_model, param_default
from .output import emit


def register(sub) -> None:
    p = sub.add_parser("predict", help="a model's top classes, by name, on your own images (files or folders), and "
                                       "the IN-9 class each maps to")
    p.add_argument("paths", nargs="+", metavar="PATH", help="image files, or folders searched for images")
    add_model_args(p)
    p.add_argument("--top", type=int, default=param_default(predict, "top"),
                   help="classes listed per image (default %(default)s)")
    add_json_arg(p)


def run(args: argparse.Namespace) -> int:
    result = predict(load_model(args), args.paths, top=args.top, device=args.device)
    emit(args, result.to_dict(), result.text())
    return 1 if result.skipped else 0  # predicted what could be read; each file skipped was named on stderr
