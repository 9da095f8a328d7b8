"""The IN-9 variants as pure functions of (image, mask, box, background).

Every function has the same signature, so the synthetic generator, the builder and the training
augmentations share them. Images are HxWx3 uint8, masks HxW bool, boxes (x0, y0, x1, y1) in
pixels with x1/y1 exclusive. Nothing here draws random numbers: which donor image supplies a
mixed background is decided by the caller (see `registry.Variant.donor`).
"""
from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

from ..data.manifest import Box  # the one box convention: (x0, y0, x1, y1), x1/y1 exclusive


def check_box(box: Box, height: int, width: int) -> Box:
    """Validate a box against an image size and return it as ints."""
    x0, y0, x1, y1 = (int(v) for v in box)
    if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height):
        raise ValueError(f"box {box} is empty or outside a {width}x{height} image")
    return x0, y0, x1, y1


def background_strip(image: np.ndarray, box: Box) -> np.ndarray:
    """The largest full-height or full-width strip of `image` outside `box`.

    Compares max(left, right) * H with max(top, bottom) * W (ties go to the vertical strip, and
    within an orientation to the left/top side), as the paper's Appendix A describes.
    """
    h, w = image.shape[:2]
    x0, y0, x1, y1 = check_box(box, h, w)
    left, right, top, bottom = x0, w - x1, y0, h - y1
    if max(left, right) * h >= max(top, bottom) * w:
        if max(left, right) == 0:
            raise ValueError(f"box {box} leaves no background strip in a {w}x{h} image")
        return image[:, :x0] if left >= right else image[:, x1:]
    return image[:y0] if top >= bottom else image[y1:]


def tile_to(strip: np.ndarray, height: int, width: int) -> np.ndarray:
    """Tile `strip` from (0, 0) until it covers a height x width canvas."""
    return np.tile(strip, (-(-height // strip.shape[0]), -(-width // strip.shape[1]), 1))[:height, :width]  # ceil


def composite(foreground: np.ndarray, mask: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Foreground pixels where mask is set, background pixels elsewhere (exact, no blending)."""
    if background.shape != foreground.shape:
        raise ValueError(f"background {background.shape} and foreground {foreground.shape} differ in size")
    return np.where(mask[..., None], foreground, background)


def original(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None) -> np.ndarray:
    """The image itself."""
    return image.copy()


def only_bg_b(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None) -> np.ndarray:
    """The box filled black."""
    x0, y0, x1, y1 = check_box(box, *image.shape[:2])
    out = image.copy()
    out[y0:y1, x0:x1] = 0
    return out


def only_bg_t(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None) -> np.ndarray:
    """The box filled with a tiling of the largest background strip outside it."""
    h, w = image.shape[:2]
    x0, y0, x1, y1 = check_box(box, h, w)
    tiled = tile_to(background_strip(image, box), h, w)
    out = image.copy()
    out[y0:y1, x0:x1] = tiled[y0:y1, x0:x1]
    return out


def no_fg(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None) -> np.ndarray:
    """Foreground mask pixels black."""
    return np.where(mask[..., None], np.uint8(0), image)


def only_fg(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None) -> np.ndarray:
    """Foreground on black."""
    return np.where(mask[..., None], image, np.uint8(0))


def mixed(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None) -> np.ndarray:
    """Foreground over `background`, the only_bg_t of a donor image (mixed_same/rand/next)."""
    if background is None:
        raise ValueError("a mixed variant needs the donor's only_bg_t background")
    return composite(image, mask, background)


def bg_blurred(image: np.ndarray, mask: np.ndarray, box: Box, background: Optional[np.ndarray] = None,
               sigma: float = 0.04) -> np.ndarray:
    """Foreground over a Gaussian-blurred copy of its own background (paper Fig. 15).

    The image's own only_bg_t is blurred, so no foreground colour bleeds into the background.
    `sigma` is relative to the shorter image side.
    """
    s = max(0.5, sigma * min(image.shape[:2]))
    blurred = cv2.GaussianBlur(only_bg_t(image, mask, box), (0, 0), sigmaX=s, sigmaY=s)
    return composite(image, mask, blurred)
