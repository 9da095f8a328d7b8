"""The arguments that many subcommands share, defined once, and the helpers to print results."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..classes import Mapping
from ..models.inputs import RESIZE_CHOICES
from ..models.norms import NORMS
from ..protocols import PROTOCOLS

#: Zero-shot label sets (mirrors `models.registry.LABEL_SETS`, kept here so --help imports no torch).
LABEL_SETS = ("auto", "imagenet", "dataset")


def add_model_args(p: argparse.ArgumentParser, batch_size: int = 64, required: bool = True) -> None:
    """--model, --checkpoint, --trust-checkpoint, --norm, --resize, --labels, --templates, --device, --batch-size."""
    p.add_argument("--model", required=required,
                   help="timm:ARCH, file:PATH, zoo:NAME, openclip:ARCH[@PRETRAINED] or hf:REPO_OR_DIR "
                        "(see `bgbench models --schemes`)")
    p.add_argument("--checkpoint", help="weights for a timm:ARCH model (bgbench, robustness, state_dict or TorchScript)")
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="allow full unpickling of the checkpoint (runs code from the file: only for trusted files)")
    p.add_argument("--norm", choices=NORMS, default="auto",
                   help="input normalization (auto: from the checkpoint, else IN-9 or ImageNet by label space)")
    add_input_args(p)
    add_device_arg(p)
    p.add_argument("--batch-size", type=int, default=batch_size, help="images per forward pass (default %(default)s)")


def add_input_args(p: argparse.ArgumentParser) -> None:
    """--resize, --labels, --templates: how images meet the model, and a zero-shot model's head."""
    p.add_argument("--resize", choices=RESIZE_CHOICES, default="auto",
                   help="images of another size than the model's input: native resizes them to it inside the "
                        "model (recorded), none feeds them as they are (auto: native for openclip: and hf:, "
                        "none for timm:, file:, zoo:)")
    p.add_argument("--labels", choices=LABEL_SETS, default="auto",
                   help="zero-shot head (openclip:): imagenet (1000 ImageNet classes, then the IN-9 mapping) or "
                        "dataset (the dataset's class folder names); auto: imagenet on IN-9, dataset otherwise")
    p.add_argument("--templates", default="openai", metavar="openai|simple|FILE",
                   help="zero-shot prompt templates: openai (CLIP's 80), simple (7), or a text file with one "
                        "template per line holding {} (default %(default)s)")


def add_protocol_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--protocol", choices=list(PROTOCOLS),
                   help="a reference protocol that fixes everything that changes a number (mapping argmax, zero-shot "
                        "labels imagenet with the openai templates, resize native, fp32, no ten-crop); recorded, and "
                        "the leaderboard ranks runs of one protocol together")


def add_device_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda or cuda:N (default %(default)s)")


def add_mapping_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mapping", choices=[m.value for m in Mapping], default=Mapping.ARGMAX.value,
                   help="1000-class models: 'argmax' (the paper's rule) or 'superclass' (sum of probabilities)")


def add_db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="SQLite results store (default ~/.bgbench/results.db or $BGBENCH_DB)")


def add_output_args(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """--json (stdout holds one JSON document and nothing else) and --quiet (no progress)."""
    if json_flag:
        p.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bars or status lines")


def add_shard_arg(p: argparse.ArgumentParser) -> None:
    """--shard K/N: write only shard K's share of the images, for `bgbench merge` to join."""
    p.add_argument("--shard", metavar="K/N",
                   help="write only shard K of N (0 <= K < N): its deterministic share of the images, plus a "
                        "SHARD_<split>.json record; join the N shard folders with `bgbench merge`")


def create_model(args: argparse.Namespace):
    """The model the shared model arguments name (a zero-shot head reads the class names of --data;
    a --protocol fills in or checks what it fixes)."""
    from .. import protocols
    from ..data.layout import class_folders
    from ..models import create_model as create
    opts = protocols.resolve(getattr(args, "protocol", None), resize=args.resize, labels=args.labels,
                             templates=args.templates)
    return create(args.model, checkpoint=args.checkpoint, trust_checkpoint=args.trust_checkpoint, norm=args.norm,
                  classes=class_folders(getattr(args, "data", None)), device=getattr(args, "device", "cpu"), **opts)


def emit(args: argparse.Namespace, document: Any, text: str) -> None:
    """Print the result: `document` as JSON with --json, else `text`."""
    if getattr(args, "json", False):
        print(json.dumps(document, indent=1, default=_json_default))
    else:
        print(text)


def _json_default(obj):
    if hasattr(obj, "as_dict"):
        return obj.as_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)
