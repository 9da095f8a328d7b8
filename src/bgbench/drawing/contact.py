"""A contact sheet of a built dataset: each image's original, its foreground mask and its variants
in one row, so that what was built is seen at a glance (a GrabCut mask that kept a sliver of the
object, a background tile that repeats the object) before any model reads it.

`bgbench build --preview` writes it beside the build's folder (`<out>-preview-<split>.png`): the
build's own folder holds only what its writer owns, so a rebuild's overwrite check is unchanged.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
from PIL import Image, ImageDraw

from ..data.images import decode_image, load_mask
from ..data.layout import discover
from .thumbs import fit

#: Columns after the original and the mask, in this order where the build has them.
VARIANTS = ("only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next")
#: Rows at most: the first images of each class in turn, so every class shows up.
ROWS = 24
SIDE = 96
PAD = 4
HEADER = 18


def preview_path(out: str | Path, split: str) -> Path:
    """Where `--preview` writes the sheet of a build into `out`: beside it, never inside it."""
    out = Path(out).expanduser().resolve()
    return out.parent / f"{out.name}-preview-{split}.png"


def contact_sheet(root: str | Path, split: str = "val", path: Optional[Path] = None, rows: int = ROWS,
                  side: int = SIDE) -> Path:
    """Write the sheet of the built dataset at `root` (one row per image, up to `rows`, classes
    taken in turn) to `path` (default `preview_path`); returns where."""
    layout = discover(root, split=split)
    columns = ["original", "mask", *[v for v in VARIANTS if v in layout.variants]]
    by_variant = {v: {it.image_id: it for it in layout.items(v)} for v in columns if v not in ("mask",)}
    chosen = _in_turn([it.image_id for it in layout.items("original")], rows)
    width = PAD + len(columns) * (side + PAD)
    height = HEADER + PAD + len(chosen) * (side + PAD)
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for c, name in enumerate(columns):
        draw.text((PAD + c * (side + PAD), 3), name, fill=(0, 0, 0))
    for r, image_id in enumerate(chosen):
        y = HEADER + PAD + r * (side + PAD)
        for c, name in enumerate(columns):
            rgb = _cell(layout, by_variant, name, image_id)
            if rgb is None:
                continue
            small = fit(rgb, side)
            sheet.paste(Image.fromarray(small), (PAD + c * (side + PAD), y))
    target = Path(path) if path is not None else preview_path(root, split)
    sheet.save(target)
    return target


def _in_turn(image_ids: List[str], rows: int) -> List[str]:
    """Up to `rows` ids, one class after another (ids are '<class folder>/<stem>')."""
    classes: dict = {}
    for i in sorted(image_ids):
        classes.setdefault(i.split("/", 1)[0], []).append(i)
    out: List[str] = []
    while len(out) < rows and any(classes.values()):
        for members in classes.values():
            if members and len(out) < rows:
                out.append(members.pop(0))
    return out


def _cell(layout, by_variant, name: str, image_id: str) -> Optional[np.ndarray]:
    if name == "mask":
        if not layout.mask_path(image_id).is_file():
            return None
        m = np.asarray(load_mask(layout.mask_path(image_id)), dtype=bool)
        return np.repeat((m * 255).astype(np.uint8)[..., None], 3, axis=2)
    item = by_variant.get(name, {}).get(image_id)
    return None if item is None else decode_image(item.path)
