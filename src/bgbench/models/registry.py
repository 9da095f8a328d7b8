"""One string names a model: 'timm:<arch>', 'file:<path>' or 'zoo:<name>'.

`create_model` resolves the string (plus an optional checkpoint) into a `BgModel`: the network,
wrapped with its normalization, and a `ModelSpec` that records what it is.
"""
from __future__ import annotations

import fnmatch
from typing import Dict, List, Optional, Tuple

import timm
import torch
from torch import nn

from ..errors import CheckpointError
from .checkpoint import LoadedCheckpoint, read_checkpoint
from .norms import DATASET, IMAGENET1K, NORMS, norm_for  # noqa: F401 (NORMS re-exported)
from .spec import BgModel, ModelSpec
from .zoo import ZOO

_HEAD_KEYS = ("fc", "head.fc", "head", "classifier", "last_linear", "head.l")
RANDOM_INIT_SEED = 0


def list_models(pattern: str = "*") -> List[str]:
    """Zoo models plus timm architectures, as model strings, filtered with fnmatch."""
    names = [f"zoo:{n}" for n in ZOO]
    names += [f"timm:{n}" for n in timm.list_models()]
    return [n for n in names if fnmatch.fnmatch(n, pattern)]


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


def _build_timm(arch: str, ckpt: Optional[LoadedCheckpoint], num_classes: Optional[int], name: str,
                norm: str) -> Tuple[nn.Module, ModelSpec]:
    if arch not in timm.list_models():
        raise CheckpointError(f"unknown timm architecture {arch!r} (see `bgbench models 'timm:*'`)")
    mean = std = None
    if ckpt is not None:
        if ckpt.kind == "bgbench":
            spec = ModelSpec.from_dict(ckpt.spec)
            if spec.arch != arch:
                raise CheckpointError(f"{ckpt_path(ckpt)} was trained as {spec.arch}, not {arch}")
            num_classes = spec.num_classes
            mean, std = spec.mean, spec.std
        elif ckpt.kind in ("robustness", "state_dict"):
            inferred = _head_classes(ckpt.state_dict, arch)
            if inferred is None:
                raise CheckpointError(f"cannot find a classifier head for {arch} in {ckpt_path(ckpt)}")
            num_classes = inferred
            mean, std = ckpt.mean, ckpt.std
        else:
            raise CheckpointError(f"{ckpt_path(ckpt)} is a {ckpt.kind} checkpoint that carries its own network; "
                                  f"use --model file:{ckpt_path(ckpt)}")
    num_classes = num_classes or 9
    if ckpt is None:  # random init is seeded, so the same model string is the same model (resume relies on it)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_INIT_SEED)
            net = timm.create_model(arch, pretrained=False, num_classes=num_classes)
    else:
        net = timm.create_model(arch, pretrained=False, num_classes=num_classes)
    if ckpt is not None:
        try:
            net.load_state_dict(ckpt.state_dict, strict=True)
        except RuntimeError:
            raise CheckpointError(f"checkpoint {ckpt_path(ckpt)} does not fit timm:{arch}: "
                                  f"{_describe_mismatch(net, ckpt.state_dict)}") from None
    if mean is None or norm != "auto":
        mean, std = norm_for(norm, num_classes, getattr(net, "pretrained_cfg", None))
    cfg = getattr(net, "pretrained_cfg", {}) or {}
    spec = ModelSpec(name=name, arch=arch, num_classes=num_classes,
                     label_space=IMAGENET1K if num_classes == 1000 else DATASET,
                     mean=tuple(mean), std=tuple(std), input_size=tuple(cfg.get("input_size", (3, 224, 224))))
    if ckpt is None:
        spec.extra["init_seed"] = RANDOM_INIT_SEED
    if ckpt is not None and ckpt.kind == "bgbench":
        saved = ModelSpec.from_dict(ckpt.spec)
        spec.class_names = saved.class_names
        spec.input_size = saved.input_size
        spec.label_space = saved.label_space
    return net, spec


def ckpt_path(ckpt: LoadedCheckpoint) -> str:
    return ckpt.path or "the checkpoint"


def _probe_classes(module: nn.Module) -> int:
    with torch.inference_mode():
        out = module(torch.zeros(1, 3, 224, 224))
    if not isinstance(out, torch.Tensor) or out.ndim != 2:
        raise CheckpointError("the model's output is not a (batch, classes) tensor")
    return int(out.shape[1])


def create_model(name: str, checkpoint: Optional[str] = None, num_classes: Optional[int] = None,
                 trust_checkpoint: bool = False, norm: str = "auto") -> BgModel:
    """Resolve a model string (and optional checkpoint) into an eval-mode `BgModel`.

    Args:
        name: 'timm:<arch>', 'file:<path>' or 'zoo:<name>'.
        checkpoint: weights for a timm architecture (any supported format).
        num_classes: output width for a randomly initialised timm model (default 9).
        trust_checkpoint: allow full unpickling (only for files you trust).
        norm: 'auto' (from the checkpoint, else by label space), 'in9', 'imagenet' or 'none'.
    """
    scheme, _, rest = name.partition(":")
    if not rest:
        raise CheckpointError(f"model {name!r} must look like timm:ARCH, file:PATH or zoo:NAME")
    ckpt = read_checkpoint(checkpoint, trust=trust_checkpoint) if checkpoint else None
    if scheme == "timm":
        net, spec = _build_timm(rest, ckpt, num_classes, name, norm)
    elif scheme == "file":
        if ckpt is not None:
            raise CheckpointError("use either --model file:PATH or --checkpoint, not both")
        ckpt = read_checkpoint(rest, trust=trust_checkpoint)
        checkpoint = rest
        if ckpt.kind == "bgbench":
            net, spec = _build_timm(ckpt.spec["arch"], ckpt, None, name, norm)
        elif ckpt.module is not None:
            net = ckpt.module.eval()
            n = _probe_classes(net)
            mean, std = norm_for(norm, n)
            spec = ModelSpec(name=name, arch=ckpt.kind, num_classes=n,
                             label_space=IMAGENET1K if n == 1000 else DATASET, mean=mean, std=std)
        else:
            raise CheckpointError(f"{rest} holds bare weights with no architecture; "
                                  f"use --model timm:ARCH --checkpoint {rest}")
    elif scheme == "zoo":
        if rest not in ZOO:
            raise CheckpointError(f"unknown zoo model {rest!r}; known: {', '.join(sorted(ZOO)) or 'none'}")
        if ckpt is not None:
            raise CheckpointError("zoo models carry their own weights; drop --checkpoint")
        net, spec = ZOO[rest]()
        if norm != "auto":
            spec.mean, spec.std = norm_for(norm, spec.num_classes)
    else:
        raise CheckpointError(f"unknown model scheme {scheme!r} in {name!r}; use timm:, file: or zoo:")
    if ckpt is not None:
        spec.checkpoint = str(checkpoint)
        spec.checkpoint_sha256 = ckpt.sha256
    return BgModel(net, spec).eval()

