"""Foreground masks from a box with GrabCut, as the paper's Appendix A describes.

`cv2.grabCut` with `GC_INIT_WITH_RECT` from the box, 5 iterations; the foreground is every pixel
not marked GC_BGD or GC_PR_BGD. A result covering less than `min_fraction` of the box is a
failure, and a failed try is repeated with another RNG seed. GrabCut's GMM initialisation
(k-means) draws from OpenCV's global RNG, so each try seeds it from (seed, image id, try):
results do not depend on which worker process runs the image or in what order.
"""
from __future__ import annotations

import hashlib
from typing import Optional

import cv2
import numpy as np

from .functions import Box

ITERATIONS = 5
MIN_FRACTION = 0.10
TRIES = 3


def try_seed(seed: int, image_id: str, attempt: int) -> int:
    """A stable 31-bit seed for one GrabCut try of one image."""
    digest = hashlib.sha256(f"{seed}\0{image_id}\0{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def grabcut_once(image: np.ndarray, box: Box, rng_seed: int, iterations: int = ITERATIONS) -> Optional[np.ndarray]:
    """One GrabCut run on an RGB image; the bool foreground mask, or None if OpenCV gives up."""
    x0, y0, x1, y1 = box
    gc = np.zeros(image.shape[:2], np.uint8)
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    cv2.setRNGSeed(rng_seed)
    try:
        cv2.grabCut(cv2.cvtColor(image, cv2.COLOR_RGB2BGR), gc, (x0, y0, x1 - x0, y1 - y0), bgd, fgd,
                    iterations, cv2.GC_INIT_WITH_RECT)
    except cv2.error:  # e.g. no background pixels to fit a GMM to
        return None
    return (gc != cv2.GC_BGD) & (gc != cv2.GC_PR_BGD)


def grabcut_mask(image: np.ndarray, box: Box, seed: int, image_id: str, tries: int = TRIES,
                 min_fraction: float = MIN_FRACTION) -> Optional[np.ndarray]:
    """The first GrabCut mask (of up to `tries`) that covers at least `min_fraction` of the box."""
    x0, y0, x1, y1 = box
    box_area = (x1 - x0) * (y1 - y0)
    for attempt in range(tries):
        mask = grabcut_once(image, box, try_seed(seed, image_id, attempt))
        if mask is not None and mask[y0:y1, x0:x1].sum() >= min_fraction * box_area:
            return mask
    return None
