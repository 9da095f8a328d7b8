"""`timm:ARCH`: a timm architecture, randomly initialised (seeded) or with `--checkpoint` weights.

The checkpoint may be bgbench's own, the robustness library's, a plain state_dict (the number of
classes is read from its head) or TorchScript (refused here: it carries its own network, use
`file:`). A robustness checkpoint's normalizer becomes the model's mean/std.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import timm
import torch
from torch import nn

from ..errors import CheckpointError
from .checkpoint import LoadedCheckpoint, read_checkpoint
from .norms import DATASET, IMAGENET1K, norm_for
from .schemes import ModelRequest, register_scheme
from .spec import ModelSpec

_HEAD_KEYS = ("fc", "head.fc", "head", "classifier", "last_linear", "head.l")
#: Random init is seeded, so the same model string is the same model (resume relies on it).
RANDOM_INIT_SEED = 0


@register_scheme("timm", usage="timm:ARCH", names=timm.list_models,
                 summary="a timm architecture: seeded random init, or weights from --checkpoint")
def timm_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """The architecture `request.target`, with the weights of `request.checkpoint` if given."""
    ckpt = read_checkpoint(request.checkpoint, trust=request.trust_checkpoint) if request.checkpoint else None
    net, spec = build_timm(request.target, ckpt, request.num_classes, request.name)
    if ckpt is not None:
        spec.checkpoint, spec.checkpoint_sha256 = str(request.checkpoint), ckpt.sha256
    return net, spec


def build_timm(arch: str, ckpt: Optional[LoadedCheckpoint], num_classes: Optional[int], name: str
               ) -> Tuple[nn.Module, ModelSpec]:
    """timm network `arch` loaded from `ckpt` (or seeded random init) and its spec (mean/std from the
    checkpoint, else chosen by label space)."""
    if arch not in timm.list_models():
        raise CheckpointError(f"unknown timm architecture {arch!r} (see `bgbench models 'timm:*'`)")
    num_classes, mean, std = _checkpoint_head(arch, ckpt, num_classes)
    if ckpt is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_INIT_SEED)
            net = timm.create_model(arch, pretrained=False, num_classes=num_classes)
    else:
        net = timm.create_model(arch, pretrained=False, num_classes=num_classes)
        try:
            net.load_state_dict(ckpt.state_dict, strict=True)
        except RuntimeError:
            raise CheckpointError(f"checkpoint {ckpt_path(ckpt)} does not fit timm:{arch}: "
                                  f"{_describe_mismatch(net, ckpt.state_dict)}") from None
    cfg = getattr(net, "pretrained_cfg", {}) or {}
    if mean is None:
        mean, std = norm_for("auto", num_classes, cfg)
    spec = ModelSpec(name=name, arch=arch, num_classes=num_classes,
                     label_space=IMAGENET1K if num_classes == 1000 else DATASET,
                     mean=tuple(mean), std=tuple(std), input_size=tuple(cfg.get("input_size", (3, 224, 224))))
    if ckpt is None:
        spec.extra["init_seed"] = RANDOM_INIT_SEED
    elif ckpt.kind == "bgbench":
        saved = ModelSpec.from_dict(ckpt.spec)
        spec.class_names, spec.input_size, spec.label_space = saved.class_names, saved.input_size, saved.label_space
        spec.resize, spec.interpolation = saved.resize, saved.interpolation
        if "last_layer" in saved.extra:  # a head fitted on a frozen backbone: what it was fitted on
            spec.extra["last_layer"] = saved.extra["last_layer"]
    return net, spec


def _checkpoint_head(arch: str, ckpt: Optional[LoadedCheckpoint], num_classes: Optional[int]):
    """(num_classes, mean, std) a checkpoint dictates for `arch` (mean/std None: not dictated)."""
    if ckpt is None:
        return num_classes or 9, None, None
    if ckpt.kind == "bgbench":
        spec = ModelSpec.from_dict(ckpt.spec)
        if spec.arch != arch:
            raise CheckpointError(f"{ckpt_path(ckpt)} was trained as {spec.arch}, not {arch}")
        return spec.num_classes, spec.mean, spec.std
    if ckpt.kind in ("robustness", "state_dict"):
        inferred = _head_classes(ckpt.state_dict, arch)
        if inferred is None:
            raise CheckpointError(f"cannot find a classifier head for {arch} in {ckpt_path(ckpt)}")
        return inferred, ckpt.mean, ckpt.std
    raise CheckpointError(f"{ckpt_path(ckpt)} is a {ckpt.kind} checkpoint that carries its own network; "
                          f"use --model file:{ckpt_path(ckpt)}")


def _head_classes(sd: Dict[str, torch.Tensor], arch: str) -> Optional[int]:
    """Number of classes from the checkpoint's classifier weight."""
    cfg_head = None
    try:
        cfg = timm.models.get_pretrained_cfg(arch)
        cfg_head = cfg.classifier if cfg is not None else None
    except Exception:  # noqa: BLE001 - unknown to the registry: fall back to common names
        cfg_head = None
    heads = [cfg_head] if isinstance(cfg_head, str) else list(cfg_head or [])
    for key in [*heads, *_HEAD_KEYS]:
        w = sd.get(f"{key}.weight")
        if w is not None and w.ndim in (2, 4):
            return int(w.shape[0])
    return None


def _describe_mismatch(net: nn.Module, sd: Dict[str, torch.Tensor]) -> str:
    own = net.state_dict()
    missing = [k for k in own if k not in sd]
    unexpected = [k for k in sd if k not in own]
    shapes = [f"{k} {tuple(sd[k].shape)} vs {tuple(own[k].shape)}" for k in own
              if k in sd and sd[k].shape != own[k].shape]
    parts = []
    for label, items in (("missing", missing), ("unexpected", unexpected), ("shape", shapes)):
        if items:
            more = f" (+{len(items) - 3} more)" if len(items) > 3 else ""
            parts.append(f"{len(items)} {label}: {', '.join(items[:3])}{more}")
    return "; ".join(parts)


def ckpt_path(ckpt: LoadedCheckpoint) -> str:
    return ckpt.path or "the checkpoint"
