"""Pure ImageNet-E edit functions: inpainting, the paper's object matrices (Eq. 7), pasting; the
GLCM statistics that measure a background's complexity.

Matrices are 2x3 forward maps (source pixel -> edited pixel) in OpenCV's convention. The object
(its pixels and mask) is warped with them and pasted onto the clean background x_b, so size,
position and direction change while the background stays the same. Every function here is a
pure function of its inputs; randomness comes in as an explicit generator.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import cv2
import numpy as np

Matrix = np.ndarray  # 2x3 float64
INPAINT_RADIUS = 5
DILATE = 3  # pixels the mask grows before inpainting, so the object's fringe goes too


def pixel_rate(mask: np.ndarray) -> float:
    """The paper's object pixel rate: mask area / image area."""
    return float(np.count_nonzero(mask)) / mask.size


def object_extent(mask: np.ndarray) -> Tuple[int, int, int, int]:
    """(xmin, ymin, xmax, ymax) of the mask's pixel centres, inclusive: the geometry the warps use,
    like `mapped_extent`. Not a `Box`: boxes (the manifest's) are end-exclusive."""
    ys, xs = np.nonzero(mask)
    if xs.size == 0:
        raise ValueError("the mask is empty")
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def inpaint_telea(image: np.ndarray, mask: np.ndarray, dilate: int = DILATE,
                  radius: int = INPAINT_RADIUS) -> np.ndarray:
    """The clean background x_b: OpenCV Telea inpainting of the dilated mask."""
    m = mask.astype(np.uint8)
    if dilate > 0:
        m = cv2.dilate(m, np.ones((2 * dilate + 1, 2 * dilate + 1), np.uint8))
    return cv2.inpaint(np.ascontiguousarray(image), m, radius, cv2.INPAINT_TELEA)


def scale_matrix(s: float, center: Tuple[float, float]) -> Matrix:
    """T_size of Eq. 7: scale by s about the box centre (dx = (1 - s) * cx, dy = (1 - s) * cy)."""
    cx, cy = center
    return np.array([[s, 0.0, (1 - s) * cx], [0.0, s, (1 - s) * cy]])


def translation_matrix(dx: float, dy: float) -> Matrix:
    """T_position of Eq. 7."""
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy]])


def rotation_matrix(degrees: float, center: Tuple[float, float]) -> Matrix:
    """T_direction of Eq. 7, about the box centre (counter-clockwise on screen for degrees > 0)."""
    return cv2.getRotationMatrix2D((float(center[0]), float(center[1])), float(degrees), 1.0)


def compose(after: Matrix, before: Matrix) -> Matrix:
    """The matrix of applying `before`, then `after`."""
    return (np.vstack([after, [0, 0, 1]]) @ np.vstack([before, [0, 0, 1]]))[:2]


def mapped_extent(matrix: Matrix, mask: np.ndarray) -> Tuple[float, float, float, float]:
    """(xmin, ymin, xmax, ymax) of the mask's pixel centres after `matrix`."""
    ys, xs = np.nonzero(mask)
    pts = matrix @ np.vstack([xs, ys, np.ones_like(xs)]).astype(np.float64)
    return float(pts[0].min()), float(pts[1].min()), float(pts[0].max()), float(pts[1].max())


class DoesNotFit(ValueError):
    """The transformed object is larger than the image. It is rejected, never shrunk: a shrink
    would mix a size change into an edit that is meant to change one attribute only."""


FIT_TOLERANCE = 1e-6  # pixels: float error of a scale chosen to touch two opposite sides


def fit_inside(matrix: Matrix, mask: np.ndarray) -> Matrix:
    """`matrix`, then shifted by the least amount that keeps every object pixel inside the image.

    Raises DoesNotFit when the transformed object is wider or taller than the image.
    """
    h, w = mask.shape
    x0, y0, x1, y1 = mapped_extent(matrix, mask)
    if x1 - x0 > w - 1 + FIT_TOLERANCE or y1 - y0 > h - 1 + FIT_TOLERANCE:
        raise DoesNotFit(f"the transformed object spans {x1 - x0 + 1:.1f} x {y1 - y0 + 1:.1f} px, "
                         f"more than the {w} x {h} image")
    dx = -x0 if x0 < 0 else (w - 1 - x1 if x1 > w - 1 else 0.0)
    dy = -y0 if y0 < 0 else (h - 1 - y1 if y1 > h - 1 else 0.0)
    return compose(translation_matrix(dx, dy), matrix)


def warp_object(image: np.ndarray, mask: np.ndarray, matrix: Matrix) -> Tuple[np.ndarray, np.ndarray]:
    """The object's pixels and mask moved by `matrix` (both bilinear; the mask is M > 0.5, the
    paper's pixel-rate rule, which tracks the scale more smoothly than nearest-neighbour)."""
    h, w = mask.shape
    img = cv2.warpAffine(image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    m = cv2.warpAffine(mask.astype(np.float32), matrix, (w, h), flags=cv2.INTER_LINEAR,
                       borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return img, m > 0.5


def transform_object(image: np.ndarray, mask: np.ndarray, background: np.ndarray,
                     matrix: Matrix) -> Tuple[np.ndarray, np.ndarray]:
    """Warp the object by `matrix` and paste it onto the clean background: M * x_o + (1 - M) * x_b."""
    obj, m = warp_object(image, mask, matrix)
    return np.where(m[..., None], obj, background), m


def scale_for_rate(image: np.ndarray, mask: np.ndarray, background: np.ndarray, rate: Optional[float],
                   tries: int = 12) -> Tuple[np.ndarray, np.ndarray, Matrix, float]:
    """Rescale the object about its box centre to pixel rate `rate` (None: 'full').

    The scale starts at sqrt(rate / current rate); the rate actually reached after warping is
    then matched by bisection on the scale (the reached rate grows with it), and the scale
    closest to the target is kept. The object is kept fully inside the image.
    Returns (image, mask, matrix, scale).
    """
    x0, y0, x1, y1 = object_extent(mask)
    center = (x0 + x1) / 2.0, (y0 + y1) / 2.0  # the box centre; 'full': the largest scale that keeps it all inside
    limit = min((mask.shape[1] - 1) / max(x1 - x0, 1), (mask.shape[0] - 1) / max(y1 - y0, 1))

    def attempt(s: float):
        matrix = fit_inside(scale_matrix(s, center), mask)
        out, m = transform_object(image, mask, background, matrix)
        return out, m, matrix, s

    if rate is None:
        return attempt(limit)
    s = min(math.sqrt(rate / pixel_rate(mask)), limit)
    lo, hi = 0.0, limit
    best = None
    for _ in range(tries):
        done = attempt(s)
        reached = pixel_rate(done[1])
        err = abs(reached - rate)
        if best is None or err < best[0]:
            best = (err, done)
        if err < 0.01 * rate:
            break
        if reached < rate:
            lo = s
            s = min(s * math.sqrt(rate / max(reached, 1e-9)), (s + hi) / 2) if hi > s else s
        else:
            hi = s
            s = max(s * math.sqrt(rate / reached), (s + lo) / 2)
        if hi - lo < 1e-4:
            break
    return best[1]


def random_position(mask: np.ndarray, rng: np.random.Generator) -> Matrix:
    """T_position with (h', w') uniform over the places where the whole object fits."""
    h, w = mask.shape
    x0, y0, x1, y1 = object_extent(mask)
    nx = int(rng.integers(0, w - (x1 - x0)))
    ny = int(rng.integers(0, h - (y1 - y0)))
    return translation_matrix(nx - x0, ny - y0)


def rotate(mask: np.ndarray, degrees: float) -> Matrix:
    """T_direction about the box centre, then shifted inside the image where it pokes out.

    The object keeps its size (and so its pixel rate): one that no longer fits once rotated
    raises DoesNotFit, and the pipeline rejects that image at that level.
    """
    x0, y0, x1, y1 = object_extent(mask)
    return fit_inside(rotation_matrix(degrees, ((x0 + x1) / 2.0, (y0 + y1) / 2.0)), mask)


def area_ratio(before: np.ndarray, after: np.ndarray) -> float:
    """Mask area after an edit over the area before (1 for a rigid move, up to resampling)."""
    return float(np.count_nonzero(after)) / max(np.count_nonzero(before), 1)


# GLCM texture statistics of a background (scikit-image), so complexity is measured, not assumed
LEVELS = 64  # grey levels after quantisation (a 256-level matrix is sparse on small images)
DISTANCES = (1,)
ANGLES = (0.0, np.pi / 4, np.pi / 2, 3 * np.pi / 4)


def glcm_stats(image: np.ndarray, mask: Optional[np.ndarray] = None) -> Tuple[float, float]:
    """(contrast, dissimilarity) over pairs of background pixels (outside `mask`), averaged over
    four directions at distance 1, on `LEVELS` grey levels. Object pixels get an extra level whose
    row and column are dropped, so no pair touching the object counts. NaN when no pair is left."""
    from skimage.feature import graycomatrix, graycoprops
    luma = np.round(image[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])).astype(np.uint8)  # ITU-R 601
    g = (luma.astype(np.int32) * LEVELS // 256).astype(np.uint8)
    if mask is not None:
        g[mask.astype(bool)] = LEVELS
    m = graycomatrix(g, DISTANCES, ANGLES, levels=LEVELS + 1, symmetric=True, normed=False)
    m = m[:LEVELS, :LEVELS].astype(np.float64)
    total = m.sum(axis=(0, 1), keepdims=True)
    if not np.all(total > 0):
        return float("nan"), float("nan")
    m /= total
    return float(graycoprops(m, "contrast").mean()), float(graycoprops(m, "dissimilarity").mean())
