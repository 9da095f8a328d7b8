"""Normalization constants and the rule that picks them (no torch: the CLI's choices come from here)."""
from __future__ import annotations

from typing import Optional, Tuple

from ..errors import CheckpointError

IN9_MEAN = (0.4717, 0.4499, 0.3837)
IN9_STD = (0.2600, 0.2516, 0.2575)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGENET1K = "imagenet1k"
DATASET = "dataset"

NORMS = ("auto", "in9", "imagenet", "none")


def norm_for(norm: str, num_classes: int, timm_cfg: Optional[dict] = None) -> Tuple[tuple, tuple]:
    """(mean, std) for `--norm`: 'auto' uses the model's own config for 1000-class models, IN-9's otherwise."""
    if norm not in NORMS:
        raise CheckpointError(f"unknown normalization {norm!r}; choose from {', '.join(NORMS)}")
    if norm == "none":
        return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    if norm == "in9":
        return IN9_MEAN, IN9_STD
    if norm == "imagenet" or num_classes == 1000:
        if norm == "auto" and timm_cfg and timm_cfg.get("mean") and len(timm_cfg["mean"]) == 3:
            return tuple(timm_cfg["mean"]), tuple(timm_cfg["std"])
        return IMAGENET_MEAN, IMAGENET_STD
    return IN9_MEAN, IN9_STD
