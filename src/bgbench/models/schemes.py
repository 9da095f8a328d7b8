"""Model schemes: the part of a model string before ':' names the module that builds the model.

A scheme is one module that registers a builder with `@register_scheme`, the way timm registers
architectures: `timm:` (timm_scheme.py), `file:` (file_scheme.py), `zoo:` (zoo.py), `openclip:`
(openclip_scheme.py), `hf:` (hf_scheme.py), `onnx:` (onnx_scheme.py) and `predictions:`
(prediction_scheme.py); a new one is a new module plus its name in `registry.SCHEME_MODULES`.
`create_model` looks the scheme up here, and `list_models` asks every scheme that can enumerate its
names. No torch is imported here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from ..errors import CheckpointError


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
        format: how its file is read, when that limits what it can do (`formats.FORMATS`: a
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
    return list(SCHEMES)


def usages() -> str:
    """'timm:ARCH, file:PATH or zoo:NAME': every registered scheme, for messages."""
    forms = [s.usage for s in SCHEMES.values()]
    return forms[0] if len(forms) == 1 else f"{', '.join(forms[:-1])} or {forms[-1]}"


def get_scheme(name: str, model: str) -> Scheme:
    """The scheme `name` of model string `model`; a one-line error naming the registered ones."""
    if name not in SCHEMES:
        raise CheckpointError(f"unknown model scheme {name!r} in {model!r}; registered schemes: {usages()}")
    return SCHEMES[name]
