"""The last layer of a classifier: the features it reads (pre-logits) and a new head in its place.

Last-layer retraining (DFR, Kirichenko et al. 2023) keeps a network and refits only the linear map
from its penultimate features to the logits. That needs two things of every kind of network
bgbench runs, written once here:
- `pre_logits(model, x)`: the features the head reads, for [0,1] images (the wrapper's resize and
  normalization applied, as in `BgModel.forward`);
- `with_head(model, weight, bias, classes)`: a copy of the model whose head is `x @ weight.T + bias`
  over `classes`, saved and reloaded like any bgbench checkpoint.

The kinds: timm networks (`forward_head(pre_logits=True)`, `reset_classifier`), transformers image
classifiers (the input of the final `nn.Linear` of their `classifier`) and open_clip zero-shot
towers (the normalized image embedding; the fitted head replaces the text-built one). torch.export
programs, ONNX models, TorchScript and pickled models hide their layers: they get a one-line error.
"""
from __future__ import annotations

import copy
import json
from typing import Optional, Sequence

import torch
from torch import nn

from ..errors import BgbenchError
from .inputs import DATASET, fit_to_native
from .spec import BgModel
from .zero_shot import ZeroShotClassifier


def _kind(model: BgModel) -> str:
    net = model.net
    if isinstance(net, ZeroShotClassifier):
        return "zero_shot"
    if all(callable(getattr(net, n, None)) for n in ("forward_features", "forward_head", "reset_classifier")):
        return "timm"
    if type(net).__name__ == "HFClassifier" and _hf_linear(net) is not None:
        return "hf"
    raise BgbenchError(f"{model.spec.name} has no penultimate layer bgbench can read: a {type(net).__name__} is "
                       f"neither a timm network, a transformers image classifier nor an open_clip tower "
                       f"(torch.export, ONNX, TorchScript and pickled models hide their layers)")


def _hf_linear(net) -> Optional[tuple]:
    """(parent module, attribute, the nn.Linear) of a transformers classifier's final linear layer."""
    head = getattr(net.model, "classifier", None)
    if isinstance(head, nn.Linear):
        return net.model, "classifier", head
    if isinstance(head, nn.Sequential) and len(head) and isinstance(head[-1], nn.Linear):
        return head, str(len(head) - 1), head[-1]
    return None


def feature_width(model: BgModel) -> int:
    """How many features the head reads."""
    kind = _kind(model)
    if kind == "zero_shot":
        return int(model.net.head.shape[1])
    if kind == "timm":
        head = model.net.get_classifier()
        if isinstance(head, nn.Linear):
            return int(head.in_features)
        return int(model.net.num_features)
    return int(_hf_linear(model.net)[2].in_features)


def pre_logits(model: BgModel, x: torch.Tensor) -> torch.Tensor:
    """(N, D) float32 features that `model`'s last linear layer reads, for [0,1] images `x`."""
    kind = _kind(model)
    if model.spec.resize == "native":
        x = fit_to_native(x, model.spec.input_size, model.spec.interpolation)
    x = model.normalize(x)
    net = model.net
    if kind == "zero_shot":
        return net.pre_logits(x).float()
    if kind == "timm":
        return net.forward_head(net.forward_features(x), pre_logits=True).flatten(1).float()
    captured = []
    hook = _hf_linear(net)[2].register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
    try:
        net(x)
    finally:
        hook.remove()
    return captured[-1].flatten(1).float()


def with_head(model: BgModel, weight: torch.Tensor, bias: torch.Tensor, classes: Sequence[str],
              provenance: dict) -> BgModel:
    """A copy of `model` whose logits are `pre_logits(x) @ weight.T + bias`, one per class of
    `classes` (the dataset's class folders); `provenance` is recorded as `spec.extra['last_layer']`."""
    kind = _kind(model)
    weight, bias = weight.detach().float().cpu(), bias.detach().float().cpu()
    n = len(classes)
    if weight.shape != (n, feature_width(model)) or bias.shape != (n,):
        raise BgbenchError(f"a head of shape {tuple(weight.shape)} does not fit {model.spec.name} "
                           f"({feature_width(model)} features, {n} classes)")
    net = copy.deepcopy(model.net).cpu()
    spec = copy.deepcopy(model.spec)
    if kind == "timm":
        net.reset_classifier(n)
        linear = net.get_classifier()
        if not isinstance(linear, nn.Linear):
            raise BgbenchError(f"{spec.name}: its new classifier is a {type(linear).__name__}, not a linear layer")
        linear.load_state_dict({"weight": weight, "bias": bias})
    elif kind == "hf":
        parent, name, old = _hf_linear(net)
        linear = nn.Linear(old.in_features, n)
        linear.load_state_dict({"weight": weight, "bias": bias})
        setattr(parent, name, linear) if not isinstance(parent, nn.Sequential) else parent.__setitem__(int(name), linear)
        config = net.model.config
        config.num_labels = n  # also sets id2label/label2id to LABEL_i; named below
        config.id2label = {i: c for i, c in enumerate(classes)}
        config.label2id = {c: i for i, c in enumerate(classes)}
        net.model.num_labels = n
        spec.extra["config"] = json.loads(config.to_json_string())
    else:
        net.head, net.head_bias = weight.contiguous(), bias.contiguous()  # buffers, saved with the weights
        net.logit_scale, net.logit_bias = 1.0, None
        spec.extra["zero_shot"] = {"fitted": True, "label_set": DATASET, "logit_scale": 1.0, "logit_bias": None}
    spec.num_classes, spec.label_space, spec.class_names = n, DATASET, tuple(classes)
    spec.checkpoint = spec.checkpoint_sha256 = None
    spec.extra["last_layer"] = provenance
    spec.extra.pop("init_seed", None)
    return BgModel(net, spec).eval()
