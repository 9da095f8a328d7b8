"""How a model is asked for, written once: `ModelOptions` is the one door to a built model.

The CLI's model flags are generated from these fields' metadata (`options.flag`), the CLI builds a
`ModelOptions` from the parsed arguments, and every API function builds one from its keyword
arguments; both then call `build`. A zero-shot model's label set, a norm, a trusted checkpoint or
a protocol therefore resolve the same way from `bgbench probe ablate` and `bgbench.probe("ablate", ...)`.
This module imports no torch (the flags are read for `--help`); `build` does.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Tuple, Union

from ..console import status
from ..errors import BgbenchError
from ..options import flag
from ..signatures import config_parameters, signed
from .inputs import LABEL_SETS, RESIZE_CHOICES
from .norms import NORMS, assumed_note, check_norm_flags, parse_size, parse_triple
#: What --model takes, in every command that runs a model.
MODEL_HELP = ("timm:ARCH[.TAG] (a TAG such as resnet50.a1_in1k loads timm's published weights), file:PATH (a "
              "bgbench checkpoint, a torch.export .pt2, an ONNX .onnx, TorchScript), onnx:FILE.onnx, zoo:NAME, "
              "openclip:ARCH[@PRETRAINED] or hf:REPO_OR_DIR (see `bgbench models --schemes`)")
#: Fields that say how to run a model rather than which numbers it gives (left out of a run's identity).
NOT_IDENTITY = ("model", "trust_checkpoint", "device", "data", "split", "checkpoint")
#: Fields a run's identity holds only when set: unset, the model gives them, and the identity names what was asked.
ONLY_WHEN_SET = ("mean", "std", "input_size")


@dataclass
class ModelOptions:
    """A model string and how to build it. `data`/`split`: the dataset a zero-shot head reads its
    class names from; `protocol`: a reference protocol that fills in or checks resize, labels and
    templates."""

    model: str = field(default="", metadata=flag("--model", MODEL_HELP))
    checkpoint: Optional[str] = field(default=None, metadata=flag(
        "--checkpoint", "weights for a timm:ARCH model (safetensors, a state_dict, a bgbench or robustness "
        "checkpoint)", type=str))
    pretrained: bool = field(default=False, metadata=flag(
        "--pretrained", "timm:ARCH: load timm's published weights of the architecture's default tag (as "
        "timm.create_model(ARCH, pretrained=True) does; timm:ARCH.TAG names a tag)", action="store_true"))
    class_map: Optional[str] = field(default=None, metadata=flag(
        "--class-map", "a 1000-class model on a dataset other than IN-9, RIVAL10 and Full-IN (whose maps are built "
        "in and need the dataset's class folders named as theirs): a JSON object {\"<ImageNet index>\": "
        "\"<class folder>\"}; unlisted classes map to none (always wrong); recorded in the run", metavar="FILE",
        type=str))
    trust_checkpoint: bool = field(default=False, metadata=flag(
        "--trust-checkpoint", "allow full unpickling of the checkpoint (runs code from the file: only for trusted "
        "files)", action="store_true"))
    norm: str = field(default="auto", metadata=flag(
        "--norm", "input normalization (auto: from the checkpoint, else IN-9 or ImageNet by label space; default "
        "%(default)s)", choices=NORMS))
    mean: Optional[Union[str, Tuple[float, ...]]] = field(default=None, metadata=flag(
        "--mean", "the model's input mean for [0,1] images, three numbers (e.g. 0.5,0.5,0.5; with --std): for a "
        "model whose file does not say it (an ONNX file without metadata, a .pt2, TorchScript, bare weights); "
        "recorded in the run", metavar="R,G,B", type=str))
    std: Optional[Union[str, Tuple[float, ...]]] = field(default=None, metadata=flag(
        "--std", "the model's input std for [0,1] images, three positive numbers (with --mean)", metavar="R,G,B",
        type=str))
    input_size: Optional[Union[int, str, Tuple[int, ...]]] = field(default=None, metadata=flag(
        "--input-size", "the model's input size, a side or HxW, for a model whose file does not fix it: images "
        "of another size are resized to it (unless --resize none); recorded in the run", metavar="HxW", type=str))
    resize: str = field(default="auto", metadata=flag(
        "--resize", "images of another size than the model's input: native resizes them to it inside the model "
        "(with the model's own interpolation), none feeds them as they are; auto: native for a model whose weights "
        "record their input size (timm tags, zoo:, openclip:, hf:, bgbench checkpoints, .pt2 and ONNX files that fix "
        "it), none for the others (random init, bare weights, TorchScript); either way the run says so and records "
        "it (default %(default)s)", choices=RESIZE_CHOICES))
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

    def __post_init__(self):
        self.mean, self.std = parse_triple(self.mean, "--mean"), parse_triple(self.std, "--std")
        self.input_size = parse_size(self.input_size)
        check_norm_flags(self.norm, self.mean, self.std)


#: (model string, line) warnings already said by this process: a study builds a model once per step.
_SAID: set = set()


@signed(config_parameters(ModelOptions, drop=("model",)))
def load_model(model: str, **options):
    """The one door to a model (`bgbench.load_model`): the `BgModel` a model string names, built
    with `ModelOptions`' fields as keywords (checkpoint, pretrained, class_map, norm, resize,
    labels, templates, channels_last, compile, device, data, split, protocol ...: see the
    signature); every API function and every command that runs a model comes through here.

    Args:
        model: 'timm:ARCH[.TAG]', 'file:PATH', 'onnx:FILE', 'zoo:NAME', 'openclip:ARCH[@PRETRAINED]'
            or 'hf:REPO_OR_DIR' (`bgbench models` lists them).
        options: an unknown one is a one-line error naming the options.
    """
    known = [f.name for f in dataclasses.fields(ModelOptions) if f.name != "model"]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise BgbenchError(f"load_model: unknown option {', '.join(unknown)}; the options are {', '.join(known)}")
    if options.get("class_map") is not None:
        options["class_map"] = str(options["class_map"])
    return build(ModelOptions(model=str(model), **options))


def build(options: ModelOptions):
    """The `BgModel` the options name (a zero-shot head reads the class names of `data`; a protocol
    fills in or checks what it fixes). A model with random weights says so, here, at every command
    that builds one; the model keeps its class map file and its identity (`identity`) for the run."""
    from .. import protocols
    from ..data.resolve import dataset_classes
    from .registry import create_model
    opts = protocols.resolve(options.protocol, resize=options.resize, labels=options.labels,
                             templates=options.templates)
    model = create_model(options.model, checkpoint=options.checkpoint, trust_checkpoint=options.trust_checkpoint,
                         norm=options.norm, classes=dataset_classes(options.data, options.split or "val"),
                         device=options.device, pretrained=options.pretrained, mean=options.mean, std=options.std,
                         input_size=options.input_size, **opts)
    seed = (model.spec.extra or {}).get("init_seed")
    if seed is not None:  # a network with random weights says so at every command that builds it
        scheme, _, arch = model.spec.name.partition(":")
        how = (f"name a tag (timm:{arch}.TAG, see `bgbench models 'timm:{arch}.*'`) or pass --pretrained for timm's "
               f"published weights, or --checkpoint FILE" if scheme == "timm" else
               "name its weights (openclip:ARCH@PRETRAINED)" if scheme == "openclip" else "give its weights")
        status(f"warning: {model.spec.name} has random weights (seeded init, seed {seed}), not trained ones: {how}")
    note = assumed_note(model.spec)
    if note and note not in _SAID:  # once per process: a study or profile builds the model at every step
        status(note)
        _SAID.add(note)
    model.class_map_file = options.class_map
    model.identity = identity(options)
    return speed_up(model, channels_last=options.channels_last, compile=options.compile)


def identity(options: ModelOptions) -> dict:
    """Everything of how a model is built that changes its numbers, as a run records it and a study
    compares it: every field but those that only say where or how to run (`NOT_IDENTITY`; the
    checkpoint enters a run by its sha256), with a file's content named by its sha256 (a class map
    or templates file edited in place is another model)."""
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(ModelOptions) if f.name not in NOT_IDENTITY}
    return {name: _identity_value(name, value) for name, value in values.items()
            if not (name in ONLY_WHEN_SET and value is None)}


def _identity_value(name: str, value):
    if name in ONLY_WHEN_SET:
        return list(value)
    if name in ("class_map", "templates") and value is not None and Path(str(value)).expanduser().is_file():
        return {"file": Path(str(value)).name,
                "sha256": hashlib.sha256(Path(str(value)).expanduser().read_bytes()).hexdigest()}
    return value


def speed_up(model, channels_last: bool = False, compile: bool = False):
    """The model with the forward options applied (`BgModel.channels_last`, `BgModel.compile_net`);
    a prediction-file model, which runs no network, is returned as it is."""
    if not hasattr(model, "compile_net"):
        return model
    if channels_last:
        model.channels_last()
    if compile:
        status("note: --compile: the network compiles during its first batches (tens of seconds on a CPU)")
        model.compile_net()
    return model
