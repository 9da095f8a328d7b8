"""`timm:ARCH[.TAG]`: a timm architecture with timm's published weights, `--checkpoint` weights, or a
seeded random init.

- `timm:ARCH.TAG` (`timm:resnet50.a1_in1k`), or `timm:ARCH --pretrained` for the architecture's
  default tag, loads the published weights through timm itself (`timm.create_model(name,
  pretrained=True)`), which reads the Hugging Face cache and honours `HF_HUB_OFFLINE`. A copy
  already in the cache is loaded from it without asking the network (`pretrained_weights`); the
  tag's `pretrained_cfg` gives the input size, interpolation, mean and std, and the spec records
  the tag and the weight file's sha256. The model sees images at its input size by default.
- `timm:ARCH --checkpoint FILE`: bgbench's own checkpoint, the robustness library's, a plain
  state_dict or a safetensors file (the number of classes is read from its head); TorchScript and
  torch.export programs are refused here (they carry their own network: use `file:`). A robustness
  checkpoint's normalizer becomes the model's mean/std. `timm:ARCH.TAG --checkpoint FILE` takes the
  tag's preprocessing with the file's weights.
- `timm:ARCH` alone is a seeded random init; every command that builds one says so.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlparse

import timm
import torch
from huggingface_hub import constants, try_to_load_from_cache
from torch import nn

from ..errors import CheckpointError
from .checkpoint import (LoadedCheckpoint, read_checkpoint, record_training, sha256_file, tensors_sha256,
                         weights_failure)
from .inputs import DATASET, IMAGENET1K, mark_assumed, norm_for
from .options import ModelRequest, Peek, register_scheme
from .spec import ModelSpec, first_three

_HEAD_KEYS = ("fc", "head.fc", "head", "classifier", "last_linear", "head.l")
#: Random init is seeded, so the same model string is the same model (resume relies on it).
RANDOM_INIT_SEED = 0


def _names() -> List[str]:
    """Architectures and their published tags (`bgbench models 'timm:resnet50*'`)."""
    return sorted({*timm.list_models(), *timm.list_pretrained()})


def timm_peek(request: ModelRequest) -> Peek:
    """A tag's classes and cached weight file from its pretrained config; a checkpoint's from the file."""
    arch, tag = split_name(request.target)
    if request.checkpoint is None and (tag or request.pretrained):
        cfg = timm.models.get_pretrained_cfg(f"{arch}.{tag}" if tag else arch)
        n = int(cfg.num_classes or 1000) if cfg is not None else None
        return Peek(IMAGENET1K if n == 1000 else DATASET, n, cached_weights(cfg) if cfg is not None else None)
    if request.checkpoint is None:
        n = request.num_classes or 9
        return Peek(IMAGENET1K if n == 1000 else DATASET, n)
    ckpt = read_checkpoint(request.checkpoint, trust=request.trust_checkpoint)
    if ckpt.kind == "bgbench":
        saved = ModelSpec.from_dict(ckpt.spec)
        return Peek(saved.label_space, saved.num_classes, Path(request.checkpoint))
    n = _head_classes(ckpt.state_dict, arch) if ckpt.state_dict is not None else None
    return Peek(None if n is None else IMAGENET1K if n == 1000 else DATASET, n, Path(request.checkpoint))


@register_scheme("timm", peek=timm_peek, usage="timm:ARCH[.TAG]", names=_names,
                 summary="a timm architecture: timm's published weights (ARCH.TAG or --pretrained), weights "
                         "from --checkpoint, or a seeded random init")
def timm_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """The architecture `request.target`, with published, checkpoint or seeded random weights."""
    arch, tag = split_name(request.target)
    if request.pretrained and request.checkpoint:
        raise CheckpointError("--pretrained loads timm's published weights and --checkpoint a file's; give one")
    if request.checkpoint is None and (tag or request.pretrained):
        return pretrained_model(arch, tag, request.name)
    ckpt = read_checkpoint(request.checkpoint, trust=request.trust_checkpoint) if request.checkpoint else None
    net, spec = build_timm(arch, ckpt, request.num_classes, request.name, tag=tag)
    if ckpt is not None:
        spec.checkpoint, spec.checkpoint_sha256 = str(request.checkpoint), ckpt.sha256
    spec.extra["format"] = ckpt.kind if ckpt is not None else "random"
    return net, spec


def split_name(target: str) -> Tuple[str, str]:
    """(architecture, tag or '') of 'ARCH[.TAG]', both checked against timm's registry."""
    arch, tag = timm.models.split_model_name_tag(target)
    if not timm.is_model(arch):
        near = ", ".join(difflib.get_close_matches(arch, timm.list_models(), n=3))
        raise CheckpointError(f"unknown timm architecture {arch!r}{f'; did you mean {near}?' if near else ''} "
                              f"(see `bgbench models 'timm:*'`)")
    if tag and f"{arch}.{tag}" not in timm.list_pretrained(f"{arch}.*"):
        tags = [name.split(".", 1)[1] for name in timm.list_pretrained(f"{arch}.*")]
        known = f"its tags: {', '.join(tags[:8])}{' ...' if len(tags) > 8 else ''}" if tags else \
            "it has no published weights"
        raise CheckpointError(f"timm has no weights tagged {tag!r} for {arch}; {known}")
    return arch, tag


def pretrained_model(arch: str, tag: str, name: str) -> Tuple[nn.Module, ModelSpec]:
    """timm's published weights of `arch.tag` (`tag` '': the default tag) and their spec."""
    cfg = timm.models.get_pretrained_cfg(f"{arch}.{tag}" if tag else arch)
    if cfg is None or not (cfg.hf_hub_id or cfg.url or cfg.file):
        raise CheckpointError(f"timm publishes no weights for {arch}; give --checkpoint FILE, or drop --pretrained "
                              f"for a random init")
    full = f"{arch}.{cfg.tag}" if cfg.tag else arch
    net, path = _load_published(full, cfg)
    pcfg = net.pretrained_cfg
    mean, std = norm_for("auto", net.num_classes, pcfg)
    spec = ModelSpec(name=name, arch=arch, num_classes=int(net.num_classes),
                     label_space=IMAGENET1K if net.num_classes == 1000 else DATASET, mean=tuple(mean), std=tuple(std),
                     input_size=tuple(pcfg.get("input_size", (3, 224, 224))), resize="native",
                     interpolation=str(pcfg.get("interpolation") or "bilinear"),
                     checkpoint=str(path) if path else f"timm:{full}",
                     checkpoint_sha256=sha256_file(path) if path else tensors_sha256(net.state_dict()))
    spec.extra["pretrained"] = {"tag": full, "hf_hub_id": cfg.hf_hub_id, "url": cfg.url or None,
                                "crop_pct": pcfg.get("crop_pct"), "weights_file": Path(path).name if path else None}
    spec.extra["format"] = "safetensors" if path and Path(path).suffix == ".safetensors" else "state_dict"
    return net, spec


def _load_published(full: str, cfg) -> Tuple[nn.Module, Optional[Path]]:
    """(the network with `full`'s weights, the weight file it was read from). A copy in the cache
    is read as a file (no network asked); otherwise timm fetches it, and a failure is one line."""
    path = cached_weights(cfg)
    if path is not None and not cfg.custom_load:
        try:
            return timm.create_model(full, pretrained=True, pretrained_cfg_overlay={"file": str(path)}), path
        except Exception as e:  # noqa: BLE001 - a cached file that is garbage, cut short, of another head, a blocked pickle
            raise CheckpointError(f"timm:{full}: cannot load its weights from the cache file {path}: "
                                  f"{weights_failure(e)}; delete the file so that it is fetched again, or replace "
                                  f"it with timm's published one") from None
    from .hub import offline_reason
    reason = offline_reason(None if cfg.hf_hub_id else cfg.url)
    if reason is not None:  # fail now, not after the hub client's minute of retries
        raise CheckpointError(no_weights_message(full, cfg, reason))
    try:
        net = timm.create_model(full, pretrained=True)
    except Exception as e:  # noqa: BLE001 - the download's errors are many (offline, DNS, HTTP, proxies)
        raise CheckpointError(no_weights_message(full, cfg, e)) from None
    return net, cached_weights(cfg)


def cached_weights(cfg) -> Optional[Path]:
    """The weight file of pretrained config `cfg` already on this machine, where timm would read it
    (the Hugging Face cache, for the files timm asks the hub for; torch's hub cache for a URL)."""
    if cfg.file and Path(cfg.file).is_file():
        return Path(cfg.file)
    if cfg.hf_hub_id:
        from timm.models._hub import _get_safe_alternatives, hf_split
        repo, revision = hf_split(cfg.hf_hub_id)
        wanted = cfg.hf_hub_filename or "pytorch_model.bin"
        for filename in [*_get_safe_alternatives(wanted), wanted]:  # the safetensors copy first, as timm reads it
            hit = try_to_load_from_cache(repo, filename, revision=revision)
            if isinstance(hit, str) and Path(hit).is_file():
                return Path(hit)
    if cfg.url:
        local = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(cfg.url).path)
        if local.is_file():
            return local
    return None


def no_weights_message(full: str, cfg, error: "Exception | str") -> str:
    """One line: the weights are not here and could not be fetched, and how to get them here."""
    reason = " ".join(str(error).split())[:200] or type(error).__name__
    offline = "HF_HUB_OFFLINE is set" if constants.is_offline_mode() else reason
    where = cfg.hf_hub_id or cfg.url
    return (f"timm:{full}: its weights are not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and could not be "
            f"downloaded ({offline}); on a machine with network run `python -c \"import timm; "
            f"timm.create_model('{full}', pretrained=True)\"` (it fetches {where}), then copy that cache folder here "
            f"or point HF_HOME at a copy")


def build_timm(arch: str, ckpt: Optional[LoadedCheckpoint], num_classes: Optional[int], name: str, tag: str = ""
               ) -> Tuple[nn.Module, ModelSpec]:
    """timm network `arch` loaded from `ckpt` (or seeded random init) and its spec (mean/std from the
    checkpoint, else chosen by label space). A `tag` gives the tag's preprocessing (input size,
    interpolation) to the checkpoint's weights."""
    if not timm.is_model(arch):
        raise CheckpointError(f"unknown timm architecture {arch!r} (see `bgbench models 'timm:*'`)")
    saved = ModelSpec.from_dict(ckpt.spec) if ckpt is not None and ckpt.kind == "bgbench" else None
    mean = std = None  # None: the weights dictate no normalization
    if ckpt is None:
        num_classes = num_classes or 9
    elif saved is not None:
        if saved.arch != arch:
            raise CheckpointError(f"{ckpt.path} was trained as {saved.arch}, not {arch}")
        num_classes, mean, std = saved.num_classes, saved.mean, saved.std
    elif ckpt.kind in ("robustness", "state_dict", "safetensors"):
        num_classes, mean, std = _head_classes(ckpt.state_dict, arch), ckpt.mean, ckpt.std
        if num_classes is None:
            raise CheckpointError(f"cannot find a classifier head for {arch} in {ckpt.path}")
    else:
        raise CheckpointError(f"{ckpt.path} is a {ckpt.kind} checkpoint that carries its own network; "
                              f"use --model file:{ckpt.path}")
    full = f"{arch}.{tag}" if tag else arch
    if ckpt is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_INIT_SEED)
            net = timm.create_model(full, pretrained=False, num_classes=num_classes)
    else:
        net = timm.create_model(full, pretrained=False, num_classes=num_classes)
        _refuse_integer_weights(net, ckpt)
        try:
            net.load_state_dict(ckpt.state_dict, strict=True)
        except RuntimeError:
            raise CheckpointError(f"checkpoint {ckpt.path} does not fit timm:{arch}: "
                                  f"{_describe_mismatch(net, ckpt.state_dict)}") from None
    cfg = getattr(net, "pretrained_cfg", {}) or {}
    guessed = mean is None
    if guessed:
        mean, std = norm_for("auto", num_classes, cfg)
    spec = ModelSpec(name=name, arch=arch, num_classes=num_classes,
                     label_space=IMAGENET1K if num_classes == 1000 else DATASET,
                     mean=tuple(mean), std=tuple(std), input_size=tuple(cfg.get("input_size", (3, 224, 224))))
    if guessed and not tag:  # bare weights (a tag's config gives its preprocessing; a random init has none)
        mark_assumed(spec, f"its weights file ({ckpt.kind}) carries no normalization" if ckpt is not None else
                     "a random init has no normalization of its own")
    if tag:  # the tag's preprocessing: its input size, with its interpolation
        spec.resize, spec.interpolation = "native", str(cfg.get("interpolation") or "bilinear")
    if ckpt is None:
        spec.extra["init_seed"] = RANDOM_INIT_SEED
    elif saved is not None:
        spec.class_names, spec.input_size, spec.label_space = saved.class_names, saved.input_size, saved.label_space
        spec.resize, spec.interpolation = saved.resize, saved.interpolation
        # what a head was fitted on; the published weights it began from
        spec.extra.update({key: saved.extra[key] for key in ("last_layer", "pretrained") if key in saved.extra})
        record_training(spec, ckpt.extra)
    return net, spec


def _head_classes(sd: Dict[str, torch.Tensor], arch: str) -> Optional[int]:
    """Number of classes from the checkpoint's classifier weight."""
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


def _refuse_integer_weights(net: nn.Module, ckpt: LoadedCheckpoint) -> None:
    """One line when the checkpoint stores as integers tensors the network holds as floats:
    `load_state_dict` would cast them without a word, and integer weights are quantized (they need
    their scales) or are no weights at all. Integer buffers (BatchNorm's num_batches_tracked) pass."""
    own = net.state_dict()
    ints = [k for k, v in ckpt.state_dict.items() if k in own and own[k].is_floating_point()
            and not (v.is_floating_point() or v.is_complex())]
    if ints:
        dtype = str(ckpt.state_dict[ints[0]].dtype).replace("torch.", "")
        raise CheckpointError(f"checkpoint {ckpt.path} stores {len(ints)} float weight(s) of {net.__class__.__name__}"
                              f" as integers ({dtype}: {first_three(ints)}); bgbench does not cast them "
                              f"(quantized weights need their scales): save the float weights")


def _describe_mismatch(net: nn.Module, sd: Dict[str, torch.Tensor]) -> str:
    own = net.state_dict()
    missing = [k for k in own if k not in sd]
    unexpected = [k for k in sd if k not in own]
    shapes = [f"{k} {tuple(sd[k].shape)} vs {tuple(own[k].shape)}" for k in own
              if k in sd and sd[k].shape != own[k].shape]
    return "; ".join(f"{len(items)} {label}: {first_three(items)}" for label, items in
                     (("missing", missing), ("unexpected", unexpected), ("shape", shapes)) if items)
