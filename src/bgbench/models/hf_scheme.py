"""`hf:REPO_OR_DIR`: Hugging Face image classifiers (`AutoModelForImageClassification`).

REPO_OR_DIR is a hub id (`facebook/convnext-base-224`; downloaded to the Hugging Face cache, so it
needs a network the first time) or a local folder written by `save_pretrained`. The model's image
processor gives the preprocessing, which the spec records: mean/std, the input size (the crop size
when the processor centre-crops, else its resize size) and the interpolation. Images are resized
to that size inside the wrapper by default (`--resize native`, `models.inputs`); with `--resize none`
a ViT that can interpolates its position embeddings instead (transformers' `interpolate_pos_encoding`).

Label space: a 1000-output head whose `id2label` names are ImageNet's (or transformers' generic
LABEL_i) is an ImageNet-1k head and goes through the IN-9 decision mapping; any other head is the
dataset's, used as is (its width is checked against the dataset's classes).
"""
from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Optional, Tuple

import torch
from torch import nn

from .. import console
from ..errors import BgbenchError, CheckpointError
from .checkpoint import first_line, tensors_sha256, weights_failure
from .inputs import DATASET, IMAGENET1K, IMAGENET_MEAN, IMAGENET_STD, check_input_size, mark_assumed, native_hw
from .options import ModelRequest, register_scheme
from .spec import ModelSpec

#: PIL resampling codes (what processors store) -> the interpolation bgbench resizes with.
_RESAMPLE = {0: "nearest", 1: "bicubic", 2: "bilinear", 3: "bicubic", 4: "bilinear", 5: "bicubic"}
#: (index, word) pairs that ImageNet-1k's class names hold, whatever their spelling ('tench, Tinca tinca').
_IMAGENET_ANCHORS = ((0, "tench"), (1, "goldfish"), (207, "golden retriever"), (999, "toilet tissue"))


class HFClassifier(nn.Module):
    """A transformers image classifier as a plain `x -> logits` module.

    Attributes:
        native_hw: the processor's input size; patch_size: the ViT patch size, when there is one.
    """

    def __init__(self, model: nn.Module, native: Tuple[int, int], name: str = ""):
        super().__init__()
        self.model = model
        self.native_hw = tuple(native)
        self.model_name = name
        patch = getattr(model.config, "patch_size", None)
        self.patch_size = (int(patch), int(patch)) if isinstance(patch, int) else (tuple(patch) if patch else None)
        self._interpolates = "interpolate_pos_encoding" in inspect.signature(model.forward).parameters

    def vit_layer(self) -> Optional[str]:
        """Grad-CAM's default layer when the model is a vision transformer: its last block's
        pre-attention norm (`layernorm_before` in ViT/DeiT, `norm1` in DINOv2), as timm's `norm1`;
        None for a convolutional model."""
        if self.patch_size is None:
            return None
        norms = [n for n, _ in self.named_modules() if n.endswith(("layernorm_before", ".norm1"))]
        return norms[-1] if norms else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        other_size = tuple(x.shape[-2:]) != self.native_hw
        kwargs = {"interpolate_pos_encoding": True} if other_size and self._interpolates else {}
        try:
            return self.model(pixel_values=x, **kwargs).logits
        except ValueError as e:
            if not other_size:
                raise
            h, w = self.native_hw
            raise BgbenchError(f"{self.model_name} cannot take {x.shape[-2]}x{x.shape[-1]} inputs ({str(e)[:120]}); "
                               f"use --resize native ({h}x{w})") from None


@register_scheme("hf", usage="hf:REPO_OR_DIR",
                 summary="a Hugging Face image classifier (hub id or save_pretrained folder)",
                 own_weights="hf: models carry their own weights; drop --checkpoint")
def hf_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """The classifier at `request.target` (hub id or folder), with its image processor's preprocessing."""
    model, processor = _load(request.target, request.name)
    pre = _preprocessing(processor, model.config)
    check_input_size(request.name, pre["input_hw"], "image processor's size")
    labels = [str(model.config.id2label.get(i, model.config.id2label.get(str(i), ""))) for i in
              range(model.config.num_labels)]
    imagenet, why = _is_imagenet_head(labels)
    spec = ModelSpec(name=request.name, arch=f"{model.config.model_type}:{type(model).__name__}",
                     num_classes=len(labels), label_space=IMAGENET1K if imagenet else DATASET,
                     mean=pre["mean"], std=pre["std"], input_size=(3, *pre["input_hw"]), resize="native",
                     interpolation=pre["interpolation"], checkpoint=request.target,
                     checkpoint_sha256=tensors_sha256(model.state_dict()))
    if not imagenet and not all(s.lower().startswith("label_") for s in labels):  # named classes only
        spec.class_names = tuple(labels)
    spec.extra = {"scheme": "hf", "format": "transformers", "model_class": type(model).__name__,
                  "label_space_from": why, "config": json.loads(model.config.to_json_string()), "preprocess": pre}
    if processor is None:
        mark_assumed(spec, "its folder has no image processor to give its mean/std")
    return HFClassifier(model, pre["input_hw"], name=request.name), spec


def _load(target: str, name: str) -> Tuple[nn.Module, object]:
    """(the classifier in fp32 and eval mode, its image processor or None: then the config's size and
    ImageNet mean/std, said aloud)."""
    local = Path(target).expanduser()
    if not local.is_dir() and (target.startswith((".", "/", "~")) or local.suffix):
        raise CheckpointError(f"hf:{target}: no such folder (a hub id looks like ORG/NAME)")
    from huggingface_hub import try_to_load_from_cache
    from .hub import offline_reason
    # a hub id whose files are not in the cache while the hub cannot be reached is one line now, not after the
    # hub client's retries (`hub.offline_reason`); a cached one loads offline
    reason = None if local.is_dir() or isinstance(try_to_load_from_cache(target, "config.json"), str) else \
        offline_reason()
    if reason is not None:
        raise CheckpointError(f"hf:{target}: not in the Hugging Face cache and it cannot be downloaded ({reason}); "
                              f"on a machine with network run `hf download {target}`, then copy the cache folder "
                              f"here or point HF_HOME at a copy")
    from transformers import AutoImageProcessor, AutoModelForImageClassification, logging
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    source = str(local) if local.is_dir() else target
    try:
        model = AutoModelForImageClassification.from_pretrained(source)
    except Exception as e:  # noqa: BLE001 - the folder's: no classifier, a pickle weights_only blocks, a config
        # its weights do not fit
        if isinstance(e, (OSError, ValueError, KeyError)) and "Weights only load failed" not in str(e):
            raise CheckpointError(f"hf:{target}: cannot load an image classifier: {first_line(e)}") from None
        reason = ("its config.json does not fit its weights (tensor shapes differ from what the config builds)"
                  if "mismatched_sizes" in str(e) else weights_failure(e))
        raise CheckpointError(f"hf:{target}: cannot load its weights: {reason}") from None
    try:
        processor = AutoImageProcessor.from_pretrained(source)
    except (OSError, ValueError, KeyError) as e:
        console.status(f"note: {name} has no image processor ({first_line(e)[:100]}); using its config's "
                       f"image size (recorded)")
        processor = None
    return model.float().eval(), processor  # fp32 whatever dtype the weights were stored in (bgbench's exact default)


def _preprocessing(processor, config) -> dict:
    """mean, std (for [0,1] inputs), input (H, W), interpolation, and the processor's own settings."""
    if processor is None:
        side = int(getattr(config, "image_size", 224) or 224)
        return {"mean": IMAGENET_MEAN, "std": IMAGENET_STD, "input_hw": (side, side), "interpolation": "bilinear",
                "processor": None}
    mean = tuple(float(v) for v in (getattr(processor, "image_mean", None) or IMAGENET_MEAN))
    std = tuple(float(v) for v in (getattr(processor, "image_std", None) or IMAGENET_STD))
    if not getattr(processor, "do_normalize", True):
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    if not getattr(processor, "do_rescale", True):  # the model expects 0..255: fold the 255 into mean/std
        mean, std = tuple(m / 255 for m in mean), tuple(s / 255 for s in std)
    resample = getattr(processor, "resample", 2)
    return {"mean": mean, "std": std, "input_hw": _input_hw(processor, config),
            "interpolation": _RESAMPLE.get(int(getattr(resample, "value", resample)), "bilinear"),
            "processor": json.loads(processor.to_json_string())}


def _input_hw(processor, config) -> Tuple[int, int]:
    """The crop size when the processor centre-crops, else its resize size, else the config's image size."""
    for attr in (("crop_size",) if getattr(processor, "do_center_crop", False) else ()) + ("size",):
        size = getattr(processor, attr, None)  # a side, a dict or a SizeDict
        if isinstance(size, int):
            size = {"height": size, "width": size}
        elif not isinstance(size, dict):
            size = {k: getattr(size, k, None) for k in ("height", "width", "shortest_edge")}
        if size.get("height") and size.get("width"):
            return int(size["height"]), int(size["width"])
        if size.get("shortest_edge"):
            return int(size["shortest_edge"]), int(size["shortest_edge"])
    return native_hw(getattr(config, "image_size", 224) or 224)


def _is_imagenet_head(labels) -> Tuple[bool, str]:
    """Whether a head is ImageNet-1k's, and why (recorded in the spec)."""
    if len(labels) != 1000:
        return False, f"{len(labels)} outputs"
    lower = [s.lower() for s in labels]
    if all(word in lower[i] for i, word in _IMAGENET_ANCHORS):
        return True, "1000 outputs named as ImageNet-1k's classes"
    if all(s.startswith("label_") for s in lower):
        return True, "1000 outputs without class names (taken as ImageNet-1k's)"
    return False, "1000 outputs named otherwise than ImageNet-1k's classes"


def rebuild(spec: ModelSpec, state_dict) -> nn.Module:
    """The network of a bgbench checkpoint written from an hf: model (config recorded in its spec)."""
    from transformers import AutoConfig, AutoModelForImageClassification
    cfg = dict(spec.extra.get("config") or {})
    if "model_type" not in cfg:
        raise CheckpointError(f"the checkpoint of {spec.name} records no transformers config to rebuild it from")
    model = AutoModelForImageClassification.from_config(AutoConfig.for_model(**cfg)).float().eval()
    net = HFClassifier(model, native_hw(spec.input_size), name=spec.name)
    net.load_state_dict(state_dict, strict=True)
    return net

