"""Foreground boxes of a dataset: from its records, or recovered from ONLY-BG-B.

`bgbench synth`, `build` and `edit` write manifest.csv (column `box`, "x0 y0 x1 y1" in the written
image, x1/y1 exclusive). The public IN-9 release has no boxes; there the box is the black
rectangle of only_bg_b, found with a tolerance for JPEG noise.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from .images import decode_image, image_size
from .layout import Layout
from .manifest import Box, read_boxes
from ..errors import DataError

#: A pixel is "black" when all its channels are at most this: JPEG (4:2:0 chroma) lifts the rim
#: of a black rectangle next to saturated colours to ~50; measured in tests/test_analyses.py.
DARK_TOLERANCE = 60
#: The recovered box grows by a row/column while at least this share of it is dark.
RUN_SHARE = 0.6


def recover_box(only_bg_b: np.ndarray, tolerance: int = DARK_TOLERANCE) -> Optional[Box]:
    """The black rectangle of an ONLY-BG-B image as (x0, y0, x1, y1), or None if there is none.

    Near-black pixels (all channels <= tolerance), cleaned of JPEG speckles by a 3x3 median, give
    a binary map; its largest all-dark rectangle is the core of the box, which then grows side by
    side while the next row or column is mostly dark (JPEG rings brighten the rectangle's rim).
    """
    import cv2
    dark = (np.asarray(only_bg_b).max(axis=2) <= tolerance).astype(np.uint8)
    if not dark.any():
        return None
    core = largest_rectangle(cv2.medianBlur(dark * 255, 3) > 0)
    if core is None:
        return None
    return _grow(dark.astype(bool), *core)


def largest_rectangle(on: np.ndarray) -> Optional[Box]:
    """The largest axis-aligned all-True rectangle of a boolean map (histogram method, O(HW))."""
    h, w = on.shape
    heights = np.zeros(w + 1, dtype=np.int64)
    best, best_area = None, 0
    for y in range(h):
        heights[:w] = np.where(on[y], heights[:w] + 1, 0)
        stack: list = []
        for x in range(w + 1):
            start = x
            while stack and stack[-1][1] >= heights[x]:
                start, height = stack.pop()
                if height * (x - start) > best_area:
                    best_area = height * (x - start)
                    best = (start, y - height + 1, x, y + 1)
            if not stack or stack[-1][1] < heights[x]:
                stack.append((start, heights[x]))
    return best


def _grow(dark: np.ndarray, x0: int, y0: int, x1: int, y1: int, share: float = RUN_SHARE) -> Box:
    h, w = dark.shape
    changed = True
    while changed:
        changed = False
        if y0 > 0 and dark[y0 - 1, x0:x1].mean() >= share:
            y0, changed = y0 - 1, True
        if y1 < h and dark[y1, x0:x1].mean() >= share:
            y1, changed = y1 + 1, True
        if x0 > 0 and dark[y0:y1, x0 - 1].mean() >= share:
            x0, changed = x0 - 1, True
        if x1 < w and dark[y0:y1, x1].mean() >= share:
            x1, changed = x1 + 1, True
    return (x0, y0, x1, y1)


def dataset_boxes(layout: Layout) -> Tuple[Dict[str, Box], Dict[str, Tuple[int, int]], str]:
    """(image id -> box, image id -> (height, width), source) for every original image.

    source is 'recorded' or 'recovered from only_bg_b'.
    """
    sizes = {it.image_id: image_size(it.path) for it in layout.items("original")}
    boxes = read_boxes(layout.root, layout.split)
    if boxes is not None:
        return {k: v for k, v in boxes.items() if k in sizes}, sizes, "recorded"
    if not (layout.root / "only_bg_b" / layout.split).is_dir():
        raise DataError(f"{layout.root} has no recorded boxes (manifest.csv) and no "
                        f"only_bg_b/{layout.split}/ to recover them from")
    from .in9 import discover
    found = {it.image_id: box for it in discover(layout.root, layout.split, variants=["only_bg_b"]).items("only_bg_b")
             if (box := recover_box(decode_image(it.path))) is not None}
    return found, sizes, "recovered from only_bg_b"
