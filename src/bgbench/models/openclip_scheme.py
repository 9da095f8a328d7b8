"""`openclip:ARCH[@PRETRAINED]`: CLIP-style zero-shot classifiers from open_clip.

- ARCH is an open_clip model name (`ViT-B-32`), `hf-hub:ORG/REPO`, or a local folder holding
  `open_clip_config.json` and its weights (open_clip's `local-dir:` layout).
- PRETRAINED is an open_clip pretrained tag (`openai`, `laion2b_s34b_b79k`: downloaded to open_clip's
  cache, so it needs a network the first time) or a local weights file (`@/path/to/weights.pt`).
  Without weights the model is randomly initialised, seeded like `timm:`.

The head is built from text (`zero_shot.py`): `--labels` chooses the class names, `--templates` the
prompts. The spec records both (every prompt template and class name), the logit scale and bias,
the label set, the model's own preprocessing (mean/std, input size, interpolation) and the
resize policy (native by default: open_clip towers take their one input size only).
"""
from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Optional, Tuple

import torch
from torch import nn

from ..errors import CheckpointError
from .checkpoint import first_line, quiet, tensors_sha256, weights_failure
from .inputs import DATASET, IMAGENET1K, native_hw
from .options import ModelRequest, Peek, register_scheme
from .spec import ModelSpec
from .zero_shot import IMAGENET_LABELS, ZeroShotClassifier, build_head, class_names, resolve_label_set, template_texts

#: Random init is seeded, so the same model string is the same model (as for timm:).
RANDOM_INIT_SEED = 0


def _names():
    import open_clip
    return open_clip.list_models()


def openclip_peek(request: ModelRequest) -> Peek:
    """A zero-shot head's label space follows from `--labels` and the dataset's classes alone."""
    label_set = resolve_label_set(request.labels, request.classes)
    if label_set == IMAGENET_LABELS:
        return Peek(IMAGENET1K, 1000)
    return Peek(DATASET, len(request.classes or ()))


@register_scheme("openclip", peek=openclip_peek, usage="openclip:ARCH[@PRETRAINED]", names=_names,
                 zero_shot=True,
                 summary="an open_clip model as a zero-shot classifier (head from class names x templates)",
                 own_weights="openclip: models take their weights after '@' (openclip:ARCH@TAG or "
                             "openclip:ARCH@/path/to/weights.pt); drop --checkpoint")
def openclip_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """A zero-shot classifier: open_clip's image tower and a head built from class names and templates."""
    import open_clip
    arch, pretrained = _parse(request.target)
    clip, seeded = _load(arch, pretrained)
    digest = tensors_sha256(clip.state_dict())
    label_set = resolve_label_set(request.labels, request.classes)
    names, templates = class_names(label_set, request.classes), template_texts(request.templates)
    head = build_head(clip, open_clip.get_tokenizer(arch), names, templates, request.device)
    pre = open_clip.get_model_preprocess_cfg(clip)
    size = native_hw(pre.get("size", 224))
    bias = getattr(clip, "logit_bias", None)
    net = ZeroShotClassifier(clip.visual, head, clip.logit_scale.exp().item(),
                             None if bias is None else bias.item(), native_hw=size, name=request.name)
    spec = ModelSpec(name=request.name, arch=arch, num_classes=len(names),
                     label_space=IMAGENET1K if label_set == IMAGENET_LABELS else DATASET,
                     mean=tuple(float(v) for v in pre["mean"]), std=tuple(float(v) for v in pre["std"]),
                     input_size=(3, *size), resize="native", interpolation=str(pre.get("interpolation", "bicubic")),
                     class_names=tuple(request.classes) if label_set != IMAGENET_LABELS else None,
                     checkpoint=pretrained or (None if seeded else arch.split(":", 1)[-1]), checkpoint_sha256=digest)
    model_cfg = None  # the architecture's open_clip config, recorded so that a saved checkpoint rebuilds the tower
    with contextlib.suppress(Exception):
        model_cfg = open_clip.get_model_config(arch)
    spec.extra = {"scheme": "openclip", "format": "open_clip", "model_cfg": model_cfg,
                  "zero_shot": {"label_set": label_set, "templates": request.templates, "template_texts": templates,
                                "class_names": names, "logit_scale": net.logit_scale, "logit_bias": net.logit_bias},
                  "preprocess": {k: (list(v) if isinstance(v, tuple) else v) for k, v in pre.items()}}
    if seeded:
        spec.extra["init_seed"] = RANDOM_INIT_SEED
    return net, spec


def _parse(target: str) -> Tuple[str, Optional[str]]:
    """(open_clip model name, pretrained tag or weights path or None) of 'ARCH[@PRETRAINED]'."""
    arch, _, pretrained = target.partition("@")
    if Path(arch).expanduser().is_dir():
        arch = f"local-dir:{Path(arch).expanduser()}"
        if pretrained:
            raise CheckpointError(f"openclip:{target}: a model folder carries its own weights; drop '@{pretrained}'")
    if pretrained and ("/" in pretrained or Path(pretrained).expanduser().suffix):
        path = Path(pretrained).expanduser()
        if not path.is_file():
            raise CheckpointError(f"openclip weights file not found: {path}")
        pretrained = str(path)
    return arch, pretrained or None


def _load(arch: str, pretrained: Optional[str]) -> Tuple[nn.Module, bool]:
    """(CLIP model in eval mode on the CPU, whether its weights are a seeded random init)."""
    import open_clip
    if not arch.startswith(("local-dir:", "hf-hub:")) and arch not in open_clip.list_models():
        raise CheckpointError(f"unknown open_clip model {arch!r} (see `bgbench models 'openclip:*'`)")
    if pretrained and not Path(pretrained).is_file() and pretrained not in open_clip.list_pretrained_tags_by_model(arch):
        tags = ", ".join(open_clip.list_pretrained_tags_by_model(arch)) or "none"
        raise CheckpointError(f"unknown pretrained tag {pretrained!r} for {arch} (known: {tags})")
    seeded = pretrained is None and not (arch.startswith("local-dir:") and any(
        next(Path(arch.split(":", 1)[1]).glob(pattern), None) for pattern in ("*.safetensors", "*.bin", "*.pth")))
    try:
        with quiet(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_INIT_SEED)
            clip = open_clip.create_model(arch, pretrained=pretrained, device="cpu", precision="fp32")
    except pickle.UnpicklingError as e:  # a weights file that torch's restricted unpickler refuses
        raise CheckpointError(f"openclip:{arch}: cannot load its weights: {weights_failure(e)}") from None
    except (RuntimeError, ValueError, OSError) as e:
        raise CheckpointError(f"openclip:{arch}: cannot load it: {first_line(e)}") from None
    return clip.eval(), seeded


def rebuild(spec: ModelSpec, state_dict) -> nn.Module:
    """The network of a bgbench checkpoint written from an openclip: model (image tower + head)."""
    from open_clip.model import CLIPVisionCfg, _build_vision_tower
    cfg = spec.extra.get("model_cfg")
    if not cfg:
        raise CheckpointError(f"the checkpoint of {spec.name} records no open_clip config to rebuild it from")
    visual = _build_vision_tower(cfg["embed_dim"], CLIPVisionCfg(**cfg["vision_cfg"]), cfg.get("quick_gelu", False))
    zs = spec.extra["zero_shot"]
    fitted = torch.zeros(spec.num_classes) if zs.get("fitted") else None  # a last-layer head has a bias per class
    net = ZeroShotClassifier(visual, torch.zeros(spec.num_classes, cfg["embed_dim"]), zs["logit_scale"],
                             zs["logit_bias"], native_hw=native_hw(spec.input_size), name=spec.name,
                             head_bias=fitted)
    net.load_state_dict(state_dict, strict=True)
    return net
