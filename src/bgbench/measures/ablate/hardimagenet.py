"""Hard ImageNet's two other ablations of the object (`ablations.py`, mmoayeri/HardImageNet), as its
code computes them: its box grayed (`replace_with_gray(keep_shape=False)`, lines 14-24) and its box
filled with the largest neighbouring tile of background (`tile`, lines 79-181). Pure: arrays in,
arrays out. Its third, the object grayed (`replace_with_gray`), is RIVAL10's region 'fg' (`engine`).

The code's own arithmetic is kept, quirks included, because a figure is only Hard ImageNet's when
it is the same computation:

- a box is `get_bbox` (lines 36-41): from the first to the last row and column of the mask,
  **exclusive** of the last (`out[x_min:x_max, y_min:y_max] = 1`);
- `tile` labels the mask's connected instances (`scipy.ndimage.label`, 4-connected) and fills each
  instance's box in turn, the later ones seeing the earlier fills. An instance's box is `get_bbox`
  of it, and its corners (`get_corners` of that box) lose one more row and column; the four
  candidate tiles beside it are cut with the rows and the columns of those corners exchanged
  (`trim_tile` slices `img[:, y1:y2, x1:x2]` with x the row corners), trimmed where they meet the
  object as lines 83-115 do, and the largest (first of right, left, up, down on a tie) is repeated
  over the box (lines 119-147) and written back transposed (line 180). On 224 x 224 images, as
  the loader feeds them, every such slice has the box's size.
- where the chosen tile is empty (0 wide or high), the code's `bbox_w // tile_w` is NumPy's
  integer division by zero, 0 with a warning, so no copy is made and the box is written back as
  its zeros: black. So it is here; `tile_ablation` says how many instances were.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

GRAY = 0.5


def box_of(mask: np.ndarray) -> Tuple[int, int, int, int]:
    """(row0, row1, col0, col1) of `get_bbox`: first to last nonzero row and column, the last
    excluded; an empty box (0, 0, 0, 0) for an empty mask."""
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        return 0, 0, 0, 0
    return int(rows.min()), int(rows.max()), int(cols.min()), int(cols.max())


def box_gray(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(3, H, W) image with the mask's box (`box_of`) replaced by gray: `replace_with_gray(keep_shape=False)`."""
    r0, r1, c0, c1 = box_of(mask)
    box = np.zeros(mask.shape, dtype=image.dtype)
    box[r0:r1, c0:c1] = 1
    return image * (1 - box) + image.dtype.type(GRAY) * box


def _trim(image: np.ndarray, mask: np.ndarray, x1: int, x2: int, y1: int, y2: int, way: str):
    """`trim_tile` (lines 79-117): the candidate tile beside a box and its size."""
    _, h, w = image.shape
    x1, y1 = max(x1, 0), max(y1, 0)
    x2, y2 = min(x2, h), min(y2, w)
    region = mask[max(y1, 0):max(y2, y1), max(x1, 0):max(x2, x1)]
    if region.sum() == 0:
        return image[:, y1:y2, x1:x2] if y2 > y1 and x2 > x1 else image[:, 0:0, 0:0], (x2 - x1) * (y2 - y1)
    if way in ("left", "down"):  # per row: the first offset past which no row holds the object
        span = (x2 - x1) if way == "left" else (y2 - y1)
        last = int(np.flatnonzero(region.sum(axis=1))[-1])
        far = last + 1 if last + 1 < span else 0
        if way == "left":
            return image[:, y1:y2, x1 + far:x2], far * (y2 - y1)
        return image[:, y1 + far:y2, x1:x2], (x2 - x1) * far
    first = int(np.flatnonzero(region.sum(axis=0))[0])  # per column: the columns before the object
    span = (x2 - x1) if way == "right" else (y2 - y1)
    far = span - min(span, first) if first >= 1 else 0
    if way == "right":
        return image[:, y1:y2, x1:x1 + far], far * (y2 - y1)
    return image[:, y1:y1 + far, x1:x2], (x2 - x1) * far


def _repeat(tile: np.ndarray, width: int, height: int, way: str) -> np.ndarray:
    """`repeat_tile_to_fill_bbox` (lines 119-147): the tile repeated over a (3, height, width) box,
    whole copies from the box's left ('right'), right ('left'), top ('up') or bottom ('down'), the
    last copy cut where the box ends."""
    axis = 2 if way in ("right", "left") else 1
    reps = [1, 1, 1]
    reps[axis] = -(-(width if axis == 2 else height) // tile.shape[axis])
    tiled = np.tile(tile, reps)
    return tiled[{"right": np.s_[:, :, :width], "left": np.s_[:, :, tiled.shape[2] - width:],
                  "up": np.s_[:, :height], "down": np.s_[:, tiled.shape[1] - height:]}[way]]


def tile_ablation(image: np.ndarray, mask: np.ndarray) -> Tuple[np.ndarray, int]:
    """(the (3, H, W) image with each object instance's box tiled over, instances whose chosen
    tile was empty and whose box is black): Hard ImageNet's `tile`."""
    from scipy import ndimage
    out = np.array(image, copy=True)
    labels, count = ndimage.label(mask)
    skipped = 0  # instances blacked out
    for j in range(1, count + 1):
        r0, r1, c0, c1 = box_of(labels == j)
        if r1 <= r0 or c1 <= c0:  # get_bbox of a one-row or one-column instance is empty
            continue
        x0, x1, y0, y1 = r0, r1 - 1, c0, c1 - 1  # get_corners of the box
        candidates = [_trim(out, mask, x1, 2 * x1 - x0, y0, y1, "right"),
                      _trim(out, mask, 2 * x0 - x1, x0, y0, y1, "left"),
                      _trim(out, mask, x0, x1, y1, 2 * y1 - y0, "up"),
                      _trim(out, mask, x0, x1, 2 * y0 - y1, y1, "down")]
        way = int(np.argmax([size for _, size in candidates]))
        tile = candidates[way][0]
        if 0 in tile.shape[1:]:  # no tile to repeat: the box's zeros
            skipped += 1
            filled = np.zeros((out.shape[0], y1 - y0, x1 - x0), dtype=out.dtype)
        else:
            filled = _repeat(tile, x1 - x0, y1 - y0, ("right", "left", "up", "down")[way])
        out[:, x0:x1, y0:y1] = filled.swapaxes(1, 2)
    return out, skipped
