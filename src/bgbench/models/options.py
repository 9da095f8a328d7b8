"""The model door: a model string and how it is asked for, resolved into a built model.

`ModelOptions` is the one way a model is asked for: the CLI's model flags are generated from its
fields' metadata (`options.flag`), the CLI builds one from the parsed arguments, every API function
from its keyword arguments, and both call `build` (`load_model` for the API). A zero-shot model's
label set, a norm, a trusted checkpoint or a protocol therefore resolve the same way from `bgbench
probe ablate` and `bgbench.probe("ablate", ...)`.

One string names a model: '<scheme>:<rest>', e.g. 'timm:<arch>', 'file:<path>', 'zoo:<name>',
'openclip:<arch>[@<pretrained>]', 'hf:<repo or folder>', 'onnx:<file>' (and 'predictions:<name>',
which names a model known only by its predictions and cannot be run). A scheme is one module that
registers a builder with `@register_scheme`, the way timm registers architectures; a new one is a
new module plus its name in `SCHEME_MODULES`. `create_model` resolves the string (plus an optional
checkpoint) into a `BgModel`: the network, wrapped with its normalization, and a `ModelSpec` that
records what it is; `build` adds what a run needs of a model: its identity, class map and speed-ups.

This module imports no torch (the flags are read for `--help`): the schemes, which do, are
imported on first use (`schemes`).
"""
from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .. import checks
from ..console import status
from ..errors import BgbenchError, CheckpointError
from ..options import flag
from ..signatures import config_parameters, signed
from .inputs import (LABEL_SETS, NORMS, RESIZE_CHOICES, assumed_note, check_input_size, check_norm_flags,
                     native_hw, parse_size, parse_triple, record_norm)

@dataclass(frozen=True)
class ModelRequest:
    """What the user asked for: the model string, split at its scheme, and `create_model`'s options.

    Attributes:
        name: the whole model string ('timm:resnet18'); it becomes the spec's name.
        target: what follows the scheme ('resnet18', a path, a zoo name).
        checkpoint: weights given apart from the string (`--checkpoint`), for schemes that take them.
        pretrained: `--pretrained`: the scheme's published weights for a bare architecture (timm's
            default tag); a scheme without published weights refuses it.
        num_classes: output width of a randomly initialised network.
        trust_checkpoint: allow full unpickling.
        norm: 'auto' lets the scheme choose; other values are applied by `create_model` afterwards.
        resize: 'auto' lets the scheme choose its resize policy; 'native' or 'none' are applied by
            `create_model` afterwards (`models.inputs`).
        labels: zero-shot schemes: 'imagenet' (the 1000 ImageNet classes, then the IN-9 mapping),
            'dataset' (the dataset's own class names) or 'auto' (imagenet on the IN-9 classes or
            when no classes are given, dataset otherwise).
        templates: zero-shot schemes: 'openai', 'simple' or a text file with one template per line.
        classes: the dataset's class folders, for a head built from their names.
        device: where a scheme may compute what the model is built from (a zero-shot head).
    """

    name: str
    target: str
    checkpoint: Optional[str] = None
    pretrained: bool = False
    num_classes: Optional[int] = None
    trust_checkpoint: bool = False
    norm: str = "auto"
    resize: str = "auto"
    labels: str = "auto"
    templates: str = "openai"
    classes: Optional[Tuple[str, ...]] = None
    device: str = "cpu"


@dataclass(frozen=True)
class Peek:
    """What can be known of a model without building it (a study's plan checks its steps with it).

    Attributes:
        label_space: 'imagenet1k' or 'dataset'; None when only building the model would tell.
        num_classes: its output width (None: unknown).
        weights: the one file its weights are read from, when there is one on this machine (a
            checkpoint, a cached download): a step is identified by its sha256.
        format: how its file is read, when that limits what it can do (`checkpoint.FORMATS`: a
            torch.export program or an ONNX model has no layers to hook).
    """

    label_space: Optional[str] = None
    num_classes: Optional[int] = None
    weights: Optional[Path] = None
    format: Optional[str] = None


@dataclass(frozen=True)
class Scheme:
    """A registered scheme: `build(request) -> (network, ModelSpec)`, and optionally its model names.

    Attributes:
        zero_shot: the scheme builds its head from class names (it reads `labels` and `templates`).
        runnable: False for models known only by their predictions (`predictions:`), which no
            job can run; their `build` explains that in one line.
        summary: what the scheme's models are, for `bgbench models --schemes`.
        own_weights: for a scheme whose models carry their own weights, the one line that refuses
            `--checkpoint` ('': the scheme reads it, or refuses it itself).
    """

    name: str
    build: Callable[[ModelRequest], tuple]
    usage: str
    names: Optional[Callable[[], Iterable[str]]] = None
    zero_shot: bool = False
    runnable: bool = True
    summary: str = ""
    peek: Optional[Callable[[ModelRequest], Peek]] = None
    own_weights: str = ""


SCHEMES: Dict[str, Scheme] = {}
#: Modules whose import registers a scheme (in the order `list_models` lists them).
SCHEME_MODULES = (".timm_scheme", ".file_scheme", ".onnx_scheme", ".zoo", ".openclip_scheme", ".hf_scheme",
                  ".prediction_scheme")


def schemes() -> Dict[str, Scheme]:
    """Every registered scheme by name, the built-in ones imported (with torch) on first use."""
    for module in SCHEME_MODULES:
        importlib.import_module(module, __package__)
    return SCHEMES


def register_scheme(name: str, usage: str, names: Optional[Callable[[], Iterable[str]]] = None,
                    zero_shot: bool = False, runnable: bool = True, summary: str = "", own_weights: str = "",
                    peek: Optional[Callable[[ModelRequest], Peek]] = None):
    """Decorator: `fn(request) -> (net, spec)` builds the models whose string starts with `name:`.

    Args:
        usage: how the string looks, for messages ('timm:ARCH').
        names: the model names (without the scheme) that `list_models` offers, if the scheme can list them.
        peek: `peek(request) -> Peek` tells what the scheme would build, without building it (no
            weights loaded, nothing downloaded); a scheme without one is peeked as unknown.
        zero_shot, runnable, summary, own_weights: see `Scheme`.
    """
    def wrap(fn):
        if name in SCHEMES:
            raise ValueError(f"model scheme {name!r} is already registered")
        SCHEMES[name] = Scheme(name, fn, usage, names, zero_shot=zero_shot, runnable=runnable,
                               summary=summary or (fn.__doc__ or "").strip().split("\n")[0], peek=peek,
                               own_weights=own_weights)
        return fn
    return wrap


def list_schemes() -> List[str]:
    return list(schemes())


def usages() -> str:
    """'timm:ARCH, file:PATH or zoo:NAME': every registered scheme, for messages."""
    forms = [s.usage for s in schemes().values()]
    return forms[0] if len(forms) == 1 else f"{', '.join(forms[:-1])} or {forms[-1]}"


def get_scheme(name: str, model: str) -> Scheme:
    """The scheme `name` of model string `model`; a one-line error naming the registered ones."""
    if name not in schemes():
        raise CheckpointError(f"unknown model scheme {name!r} in {model!r}; registered schemes: {usages()}")
    return SCHEMES[name]


def list_models(pattern: str = "*") -> List[str]:
    """Model strings of every scheme that can list its models, filtered with fnmatch ('timm:resnet*')."""
    head = pattern.split(":", 1)[0] if ":" in pattern else None
    names = [f"{scheme.name}:{n}" for scheme in schemes().values()
             if scheme.names is not None and (head is None or fnmatch.fnmatch(scheme.name, head)) for n in scheme.names()]
    return [n for n in names if fnmatch.fnmatch(n, pattern)]


def _request(name: str, checkpoint: Optional[str] = None, classes: Optional[Sequence[str]] = None,
             **options) -> Tuple[Scheme, ModelRequest]:
    """The scheme of model string `name` and the `ModelRequest` it is built (or peeked) with."""
    scheme_name, _, target = str(name).partition(":")
    if not target:
        raise CheckpointError(f"model {name!r} must look like {usages()}")
    return get_scheme(scheme_name, str(name)), ModelRequest(
        name=str(name), target=target, checkpoint=str(checkpoint) if checkpoint else None,
        classes=tuple(classes) if classes else None, **options)


def create_model(name: str, checkpoint: Optional[str] = None, num_classes: Optional[int] = None,
                 trust_checkpoint: bool = False, norm: str = "auto", resize: str = "auto", labels: str = "auto",
                 templates: str = "openai", classes: Optional[Sequence[str]] = None, device: str = "cpu",
                 pretrained: bool = False, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None, input_size=None):
    """Resolve a model string (and optional checkpoint) into an eval-mode `BgModel`.

    Args:
        name: '<scheme>:<rest>'; `list_models()` (`bgbench models`) lists what the schemes offer.
        checkpoint: weights for a timm architecture (any supported format).
        num_classes: output width for a randomly initialised timm model (default 9).
        trust_checkpoint: allow full unpickling (only for files you trust).
        norm: 'auto' (the scheme's choice: from the checkpoint, else by label space), 'in9', 'imagenet' or 'none'.
        resize: 'auto' (the scheme's choice), 'native' or 'none' (`bgbench.models.inputs`).
        labels, templates: the head of a zero-shot model (openclip:): see `ModelRequest`.
        classes: the dataset's class folders (a zero-shot head over the dataset's own class names).
        device: where a zero-shot head is computed (the model itself is returned on the CPU).
        pretrained: a bare timm architecture with timm's published weights (its default tag).
        mean, std: the model's input normalization for [0,1] images (three numbers each), for a
            model whose file does not say it; where they came from is recorded in
            `spec.extra['normalization']` (`inputs.record_norm`).
        input_size: the model's input (H, W) (or one side), for a model whose file does not fix it:
            with `resize` 'auto', images of another size are resized to it.
    """
    scheme, request = _request(name, checkpoint, classes, pretrained=pretrained, num_classes=num_classes,
                               trust_checkpoint=trust_checkpoint, norm=norm, resize=resize, labels=labels,
                               templates=str(templates), device=device)
    checks.one_of("--norm", norm, NORMS)
    checks.one_of("--resize", resize, RESIZE_CHOICES)
    checks.one_of("--labels", labels, LABEL_SETS)
    mean, std, input_size = parse_triple(mean, "--mean"), parse_triple(std, "--std"), parse_size(input_size)
    check_norm_flags(norm, mean, std)
    if scheme.runnable and not scheme.zero_shot and (labels == "dataset" or templates != "openai"):
        raise CheckpointError(f"--labels dataset and --templates build the head of a zero-shot model (openclip:); "
                              f"{name} has its own head")
    if pretrained and scheme.name != "timm":
        raise CheckpointError(f"--pretrained loads timm's published weights for a timm:ARCH model; {name} names "
                              f"its weights itself")
    if checkpoint and scheme.own_weights:
        raise CheckpointError(scheme.own_weights)
    net, spec = scheme.build(request)
    record_norm(spec, norm, mean, std)
    fixed = getattr(net, "fixed_hw", None)
    if input_size is not None and fixed is not None and tuple(fixed) != tuple(input_size):
        raise CheckpointError(f"{spec.name}'s file fixes its input at {fixed[0]}x{fixed[1]}; --input-size "
                              f"{input_size[0]}x{input_size[1]} cannot change it (drop --input-size)")
    if input_size is not None:  # images of another size are then resized to it unless --resize none says otherwise
        spec.input_size, spec.resize = (3, int(input_size[0]), int(input_size[1])), "native"
        spec.extra["input_size_source"] = "--input-size"
    if resize != "auto":
        spec.resize = resize
    if spec.input_size is not None:
        check_input_size(spec.name, native_hw(spec.input_size))
    from .spec import BgModel
    return BgModel(net, spec).eval()


def peek_model(name: str, checkpoint: Optional[str] = None, pretrained: bool = False, trust_checkpoint: bool = False,
               labels: str = "auto", classes: Optional[Sequence[str]] = None) -> Peek:
    """What `create_model` would build for these options and a dataset of `classes`, as far as the
    scheme can tell without building it (label space, output width, the weight file): what a
    study's plan checks each step with. Unknown parts are None."""
    scheme, request = _request(name, checkpoint, classes, pretrained=pretrained, trust_checkpoint=trust_checkpoint,
                               labels=labels)
    return scheme.peek(request) if scheme.peek is not None else Peek()  # a scheme without a peek: unknown


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
