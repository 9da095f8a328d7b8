"""One string names a model: '<scheme>:<rest>', e.g. 'timm:<arch>', 'file:<path>', 'zoo:<name>',
'openclip:<arch>[@<pretrained>]', 'hf:<repo or folder>', 'onnx:<file>' (and 'predictions:<name>', which
names a model known only by its predictions and cannot be run).

`create_model` resolves the string (plus an optional checkpoint) into a `BgModel`: the network,
wrapped with its normalization, and a `ModelSpec` that records what it is. It is the scheme step
under the one public door, `bgbench.load_model` (`models.options`), which adds what a run needs
of a model: its identity, class map and speed-ups. The scheme is looked up
in the registry of `schemes.py`; the modules in SCHEME_MODULES register the built-in ones.
"""
from __future__ import annotations

import fnmatch
import importlib
from typing import List, Optional, Sequence, Tuple

from .. import checks
from ..errors import CheckpointError
from .inputs import LABEL_SETS, RESIZE_CHOICES, check_input_size, native_hw
from .norms import NORMS, check_norm_flags, parse_size, parse_triple, record_norm
from .schemes import SCHEMES, ModelRequest, Peek, Scheme, get_scheme, list_schemes, usages  # noqa: F401 (list_schemes re-exported)
from .spec import BgModel

#: Modules whose import registers a scheme (in the order `list_models` lists them).
SCHEME_MODULES = (".timm_scheme", ".file_scheme", ".onnx_scheme", ".zoo", ".openclip_scheme", ".hf_scheme",
                  ".prediction_scheme")

for _module in SCHEME_MODULES:
    importlib.import_module(_module, __package__)


def list_models(pattern: str = "*") -> List[str]:
    """Model strings of every scheme that can list its models, filtered with fnmatch ('timm:resnet*')."""
    head = pattern.split(":", 1)[0] if ":" in pattern else None
    names = [f"{scheme.name}:{n}" for scheme in SCHEMES.values()
             if scheme.names is not None and (head is None or fnmatch.fnmatch(scheme.name, head)) for n in scheme.names()]
    return [n for n in names if fnmatch.fnmatch(n, pattern)]


def _scheme(name: str) -> Tuple[Scheme, str]:
    """The scheme of model string `name` and what follows its ':'."""
    scheme_name, _, target = str(name).partition(":")
    if not target:
        raise CheckpointError(f"model {name!r} must look like {usages()}")
    return get_scheme(scheme_name, str(name)), target


def create_model(name: str, checkpoint: Optional[str] = None, num_classes: Optional[int] = None,
                 trust_checkpoint: bool = False, norm: str = "auto", resize: str = "auto", labels: str = "auto",
                 templates: str = "openai", classes: Optional[Sequence[str]] = None, device: str = "cpu",
                 pretrained: bool = False, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None, input_size=None) -> BgModel:
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
            `spec.extra['normalization']` (`norms.record_norm`).
        input_size: the model's input (H, W) (or one side), for a model whose file does not fix it:
            with `resize` 'auto', images of another size are resized to it.
    """
    scheme, target = _scheme(name)
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
    request = ModelRequest(name=str(name), target=target, checkpoint=str(checkpoint) if checkpoint else None,
                           pretrained=pretrained, num_classes=num_classes, trust_checkpoint=trust_checkpoint, norm=norm, resize=resize,
                           labels=labels, templates=str(templates), classes=tuple(classes) if classes else None,
                           device=device)
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
    return BgModel(net, spec).eval()


def peek_model(name: str, checkpoint: Optional[str] = None, pretrained: bool = False, trust_checkpoint: bool = False,
               labels: str = "auto", classes: Optional[Sequence[str]] = None) -> Peek:
    """What `create_model` would build for these options and a dataset of `classes`, as far as the
    scheme can tell without building it (label space, output width, the weight file): what a
    study's plan checks each step with. Unknown parts are None."""
    scheme, target = _scheme(name)
    request = ModelRequest(name=str(name), target=target, checkpoint=str(checkpoint) if checkpoint else None,
                           pretrained=pretrained, trust_checkpoint=trust_checkpoint, labels=labels,
                           classes=tuple(classes) if classes else None)
    return scheme.peek(request) if scheme.peek is not None else Peek()  # a scheme without a peek: unknown
