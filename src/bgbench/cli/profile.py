"""`bgbench profile --model M [--model M2 ...] --data D [--data D2 ...]`: the standard battery (eval,
a sampled challenge, noise, saliency, ablation and features where the data allows) as a study
without a file."""
from __future__ import annotations

import argparse

from .arguments import add_model_arg
from .study import add_study_args, run_spec


def register(sub) -> None:
    from ..studies.spec import PROFILE
    p = sub.add_parser("profile", help="a model's background-reliance profile: " + ", ".join(PROFILE) +
                       " (as the data allows), resumably, ending with the report")
    add_model_arg(p, help="a model string (repeat --model for several models)", repeat=True)
    p.add_argument("--data", action="append", required=True, metavar="ROOT",
                   help="a dataset root (repeat for several datasets)")
    p.add_argument("--out", default="bgbench-profile", help="the report's folder (default %(default)s)")
    add_study_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..studies import profile_study
    return run_spec(args, profile_study(args.model, args.data, out=args.out))
