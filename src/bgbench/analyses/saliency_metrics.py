"""Saliency alignment with the object mask, as pure functions of a CAM and a mask (RIVAL10).

The CAM is upsampled to the image size and ReLU'd before these are computed; each is per image.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

BINARIZE_AT = 0.5  # of the CAM's maximum


def saliency_alignment(cam: np.ndarray, mask: np.ndarray) -> Dict[str, float]:
    """precision Σ(cam·m)/Σcam; IoU and Dice of cam ≥ 0.5·max against m; the density difference
    mean(cam | inside) − mean(cam | outside) of the CAM scaled to max 1 (so models compare).

    A CAM that is zero everywhere has no defined alignment: every value is NaN.
    """
    cam = np.maximum(np.asarray(cam, dtype=np.float64), 0)
    m = np.asarray(mask, dtype=bool)
    total, peak = cam.sum(), cam.max()
    if total <= 0 or peak <= 0:
        return {"precision": float("nan"), "iou": float("nan"), "dice": float("nan"), "density_diff": float("nan")}
    on = cam >= BINARIZE_AT * peak
    inter, union = float((on & m).sum()), float((on | m).sum())
    scaled = cam / peak
    inside = float(scaled[m].mean()) if m.any() else 0.0
    outside = float(scaled[~m].mean()) if (~m).any() else 0.0
    return {"precision": float((cam * m).sum() / total), "iou": inter / union if union else 0.0,
            "dice": 2 * inter / (on.sum() + m.sum()) if (on.sum() + m.sum()) else 0.0,
            "density_diff": inside - outside}
