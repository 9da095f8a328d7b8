"""A foreground's verdict, and the composite every verdict is made of."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from .matrix import UNMAPPED



@dataclass
class FgResult:
    """The verdict for one foreground."""

    index: int
    fooled: bool
    pairs: int  # composites evaluated
    fooling_bg: int = -1  # index of the first fooling background found, or -1
    fooling_pred: int = -2  # what it was predicted as
    # bf16-verified: what a raised delta re-examines (a verified.NearTies; the fp32 path never imports it)
    near: Optional[Any] = field(default=None, repr=False)
    row: Optional[np.ndarray] = field(default=None, repr=False)  # full mode: its predictions (uint8, 255 unmapped)


OnResult = Optional[Callable[[FgResult], None]]


def composite(images: torch.Tensor, masks: torch.Tensor, backgrounds: torch.Tensor, fi: torch.Tensor,
              bi: torch.Tensor) -> torch.Tensor:
    """NHWC uint8 composites: foreground fi[k] over background bi[k] (an exact pixel selection)."""
    return torch.where(masks[fi][..., None], images[fi], backgrounds[bi])


def row_of(pred: torch.Tensor) -> np.ndarray:
    """Predictions (CPU; -1 for unmapped) as entries of a full row: uint8, `UNMAPPED` for -1."""
    return torch.where(pred < 0, torch.full_like(pred, UNMAPPED), pred).numpy().astype(np.uint8)
