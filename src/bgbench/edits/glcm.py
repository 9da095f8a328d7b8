"""GLCM texture statistics of a background (scikit-image), so complexity is measured, not assumed."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

LEVELS = 64  # grey levels after quantisation (a 256-level matrix is sparse on small images)
DISTANCES = (1,)
ANGLES = (0.0, np.pi / 4, np.pi / 2, 3 * np.pi / 4)


def grey(image: np.ndarray) -> np.ndarray:
    """ITU-R 601 luma, as uint8."""
    return np.round(image[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])).astype(np.uint8)


def glcm_stats(image: np.ndarray, mask: Optional[np.ndarray] = None) -> Tuple[float, float]:
    """(contrast, dissimilarity) over pairs of background pixels (outside `mask`), averaged over
    four directions at distance 1, on `LEVELS` grey levels. Object pixels get an extra level whose
    row and column are dropped, so no pair touching the object counts. NaN when no pair is left."""
    from skimage.feature import graycomatrix, graycoprops
    g = (grey(image).astype(np.int32) * LEVELS // 256).astype(np.uint8)
    if mask is not None:
        g[mask.astype(bool)] = LEVELS
    m = graycomatrix(g, DISTANCES, ANGLES, levels=LEVELS + 1, symmetric=True, normed=False)
    m = m[:LEVELS, :LEVELS].astype(np.float64)
    total = m.sum(axis=(0, 1), keepdims=True)
    if not np.all(total > 0):
        return float("nan"), float("nan")
    m /= total
    return float(graycoprops(m, "contrast").mean()), float(graycoprops(m, "dissimilarity").mean())
