"""`bgbench profile --model M [--model M2 ...] --data D [--data D2 ...]`: the standard battery (eval,
a sampled challenge, noise, saliency, ablation and features where the data allows), or the
`--measures` named, as a study without a file. A step the data or a model's format cannot give
(saliency of an ONNX model) is skipped with its reason and the rest runs. The model flags (`--class-map`, `--resize`, `--pretrained` ...) apply to every
model, as a study file's model table sets them for one."""
from __future__ import annotations

import argparse

from ..models.options import ModelOptions
from .arguments import add_config_flags, add_model_arg
from .study import add_study_args, run_spec


def register(sub) -> None:
    from ..studies.spec import STUDY_SETS, profile_battery
    battery = profile_battery()
    p = sub.add_parser("profile", help="a model's background-reliance profile: " + ", ".join(battery) +
                       " (as the data allows), resumably, ending with the scorecard and the report")
    add_model_arg(p, help="a model string (repeat --model for several models)")
    g = p.add_argument_group("model options (for every --model)")
    add_config_flags(g, ModelOptions, skip=STUDY_SETS)  # a study sets those per step itself
    p.add_argument("--data", action="append", required=True, metavar="ROOT",
                   help="a dataset root (repeat for several datasets)")
    p.add_argument("--measures", nargs="+", metavar="MEASURE",
                   help="the battery to run (default: " + " ".join(battery) + "); any measure a study runs, "
                        "with the battery's options where it has them")
    p.add_argument("--out", default="bgbench-profile", help="the report's folder (default %(default)s)")
    add_study_args(p)


def model_options(args: argparse.Namespace) -> dict:
    """The model flags the user changed from their defaults (a study model's options)."""
    from ..studies.spec import MODEL_OPTIONS
    defaults = ModelOptions()
    return {name: getattr(args, name) for name in MODEL_OPTIONS
            if hasattr(args, name) and getattr(args, name) != getattr(defaults, name)}


def run(args: argparse.Namespace) -> int:
    from ..studies import profile_study
    measures = [m for item in args.measures or () for m in item.split(",") if m]
    return run_spec(args, profile_study(args.model, args.data, out=args.out, model_options=model_options(args),
                                        measures=measures or None))
