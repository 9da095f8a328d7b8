"""Foreground boxes of a dataset: from its records, or recovered from ONLY-BG-B.

`bgbench synth` writes boxes_<split>.json, `bgbench build` writes manifest.csv (column `box`,
"x0 y0 x1 y1" in the built image). The public IN-9 release has neither; there the box is the
black rectangle of only_bg_b, found with a tolerance for JPEG noise.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from ..data.images import decode_image
from ..data.layout import Layout
from ..errors import DataError

Box = Tuple[int, int, int, int]

#: A pixel is "black" when all its channels are at most this (JPEG rings around the rectangle).
DARK_TOLERANCE = 40
#: A row/column belongs to the box when at least this share of the box's longest run is dark.
RUN_SHARE = 0.5


def recorded_boxes(root: Path, split: str) -> Optional[Dict[str, Box]]:
    """image id -> box from the dataset's own records, or None when it has none."""
    root = Path(root)
    synth = root / f"boxes_{split}.json"
    if synth.is_file():
        return {k: tuple(int(x) for x in v) for k, v in json.loads(synth.read_text()).items()}
    manifest = root / "manifest.csv"
    if manifest.is_file():
        with open(manifest, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("split", split) == split and r.get("box")]
        if rows:
            return {_manifest_id(r): tuple(int(x) for x in r["box"].split()) for r in rows}
    return None


def _manifest_id(row: dict) -> str:
    image = row["image"]
    return image if "/" in image else f"{row['class']}/{Path(image).stem}"


def recover_box(only_bg_b: np.ndarray, tolerance: int = DARK_TOLERANCE) -> Optional[Box]:
    """The black rectangle of an ONLY-BG-B image as (x0, y0, x1, y1), or None if there is none.

    Dark pixels are counted per row and per column; the box spans the longest contiguous run of
    rows (and of columns) whose dark count reaches RUN_SHARE of the maximum. Dark background
    pixels outside the box are scattered, so they rarely form such a run.
    """
    dark = (np.asarray(only_bg_b).max(axis=2) <= tolerance)
    if not dark.any():
        return None
    rows = _longest_run(dark.sum(axis=1))
    cols = _longest_run(dark.sum(axis=0))
    if rows is None or cols is None:
        return None
    # refine: within the row span, the columns dark in most rows (and vice versa)
    sub = dark[rows[0]:rows[1]]
    cols = _longest_run(sub.sum(axis=0)) or cols
    sub = dark[:, cols[0]:cols[1]]
    rows = _longest_run(sub.sum(axis=1)) or rows
    return (cols[0], rows[0], cols[1], rows[1])


def _longest_run(counts: np.ndarray) -> Optional[Tuple[int, int]]:
    if counts.max() == 0:
        return None
    on = counts >= RUN_SHARE * counts.max()
    best, start = None, None
    for i, v in enumerate(np.append(on, False)):
        if v and start is None:
            start = i
        elif not v and start is not None:
            if best is None or i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    return best


def box_iou(a: Box, b: Box) -> float:
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def dataset_boxes(layout: Layout) -> Tuple[Dict[str, Box], Dict[str, Tuple[int, int]], str]:
    """(image id -> box, image id -> (height, width), source) for every original image.

    source is 'recorded' or 'recovered from only_bg_b'.
    """
    from PIL import Image
    sizes = {}
    for it in layout.items("original"):
        with Image.open(it.path) as im:
            sizes[it.image_id] = (im.height, im.width)
    boxes = recorded_boxes(layout.root, layout.split)
    if boxes is not None:
        return {k: v for k, v in boxes.items() if k in sizes}, sizes, "recorded"
    if not (layout.root / "only_bg_b" / layout.split).is_dir():
        raise DataError(f"{layout.root} has no recorded boxes (boxes_{layout.split}.json or manifest.csv) and no "
                        f"only_bg_b/{layout.split}/ to recover them from")
    from ..data.layout import discover
    found = {}
    for it in discover(layout.root, layout.split, variants=["only_bg_b"]).items("only_bg_b"):
        box = recover_box(decode_image(it.path))
        if box is not None:
            found[it.image_id] = box
    return found, sizes, "recovered from only_bg_b"
