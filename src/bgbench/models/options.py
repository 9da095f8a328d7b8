"""How a model is asked for, written once: `ModelOptions` is the one door to a built model.

The CLI's model flags are generated from these fields' metadata (`options.flag`), the CLI builds a
`ModelOptions` from the parsed arguments, and every API function builds one from its keyword
arguments; both then call `build`. A zero-shot model's label set, a norm, a trusted checkpoint or
a protocol therefore resolve the same way from `bgbench probe ablate` and `bgbench.probe_ablate`.
This module imports no torch (the flags are read for `--help`); `build` does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..options import flag
from .inputs import LABEL_SETS, RESIZE_CHOICES
from .norms import NORMS
#: What --model takes, in every command that runs a model.
MODEL_HELP = ("timm:ARCH, file:PATH, zoo:NAME, openclip:ARCH[@PRETRAINED] or hf:REPO_OR_DIR "
              "(see `bgbench models --schemes`)")


@dataclass
class ModelOptions:
    """A model string and how to build it. `data`/`split`: the dataset a zero-shot head reads its
    class names from; `protocol`: a reference protocol that fills in or checks resize, labels and
    templates."""

    model: str = field(default="", metadata=flag("--model", MODEL_HELP))
    checkpoint: Optional[str] = field(default=None, metadata=flag(
        "--checkpoint", "weights for a timm:ARCH model (bgbench, robustness, state_dict or TorchScript)", type=str))
    trust_checkpoint: bool = field(default=False, metadata=flag(
        "--trust-checkpoint", "allow full unpickling of the checkpoint (runs code from the file: only for trusted "
        "files)", action="store_true"))
    norm: str = field(default="auto", metadata=flag(
        "--norm", "input normalization (auto: from the checkpoint, else IN-9 or ImageNet by label space; default "
        "%(default)s)", choices=NORMS))
    resize: str = field(default="auto", metadata=flag(
        "--resize", "images of another size than the model's input: native resizes them to it inside the model "
        "(recorded), none feeds them as they are (auto: native for openclip: and hf:, none for timm:, file:, zoo:; "
        "default %(default)s)", choices=RESIZE_CHOICES))
    labels: str = field(default="auto", metadata=flag(
        "--labels", "zero-shot head (openclip:): imagenet (1000 ImageNet classes, then the IN-9 mapping) or dataset "
        "(the dataset's class folder names); auto: imagenet on IN-9, dataset otherwise (default %(default)s)",
        choices=LABEL_SETS))
    templates: str = field(default="openai", metadata=flag(
        "--templates", "zero-shot prompt templates: openai (CLIP's 80), simple (7), or a text file with one template "
        "per line holding {} (default %(default)s)", metavar="openai|simple|FILE"))
    channels_last: bool = field(default=False, metadata=flag(
        "--channels-last", "store the network's weights channels-last (NHWC), the layout bgbench's inputs already "
        "have: faster convolutions on many CPUs and on tensor-core GPUs (fp32 logits may change in the last bits)",
        action="store_true"))
    compile: bool = field(default=False, metadata=flag(
        "--compile", "torch.compile the network: a one-off compile (tens of seconds on a CPU) for faster forwards "
        "on long runs, mostly on GPUs (fp32 logits may change in the last bits; Grad-CAM runs eager)",
        action="store_true"))
    device: str = "cpu"
    data: Optional[str | Path] = None
    split: str = "val"
    protocol: Optional[str] = None


def build(options: ModelOptions):
    """The `BgModel` the options name (a zero-shot head reads the class names of `data`; a protocol
    fills in or checks what it fixes)."""
    from .. import protocols
    from ..data.layout import class_folders
    from .registry import create_model
    opts = protocols.resolve(options.protocol, resize=options.resize, labels=options.labels,
                             templates=options.templates)
    model = create_model(options.model, checkpoint=options.checkpoint, trust_checkpoint=options.trust_checkpoint,
                         norm=options.norm, classes=class_folders(options.data, options.split or "val"),
                         device=options.device, **opts)
    return speed_up(model, channels_last=options.channels_last, compile=options.compile)


def speed_up(model, channels_last: bool = False, compile: bool = False):
    """The model with the forward options applied (`BgModel.channels_last`, `BgModel.compile_net`);
    a prediction-file model, which runs no network, is returned as it is."""
    if not hasattr(model, "compile_net"):
        return model
    if channels_last:
        model.channels_last()
    if compile:
        from ..console import status
        status("note: --compile: the network compiles during its first batches (tens of seconds on a CPU)")
        model.compile_net()
    return model
