"""A contact sheet of a built dataset: each image's original, its foreground mask and its variants
in one row, so that what was built is seen at a glance (a GrabCut mask that kept a sliver of the
object, a background tile that repeats the object) before any model reads it.

`bgbench build --preview` writes it beside the build's folder (`<out>-preview-<split>.png`): the
build's own folder holds only what its writer owns, so a rebuild's overwrite check is unchanged.
"""
from __future__ import annotations

import os
from itertools import zip_longest
from pathlib import Path
from typing import List, Optional

import numpy as np
from PIL import Image, ImageDraw, PngImagePlugin

from ..data.images import decode_image, read_mask
from ..data.in9 import discover
from ..errors import BgbenchError
from .thumbs import fit

#: Columns after the original and the mask, in this order where the build has them.
VARIANTS = ("only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next")
#: Rows at most: the first images of each class in turn, so every class shows up.
ROWS = 24
SIDE = 96
PAD = 4
HEADER = 18
#: Below each row: its image id.
NAME = 12
#: The PNG text chunk that says a sheet is bgbench's: only such a file is replaced by a rebuild's.
MARK = ("Software", "bgbench build --preview")


def preview_path(out: str | Path, split: str) -> Path:
    """Where `--preview` writes the sheet of a build into `out`: beside it, never inside it."""
    out = Path(out).expanduser().resolve()
    return out.parent / f"{out.name}-preview-{split}.png"


def refuse_foreign_preview(path: Path) -> None:
    """One line, before the build, when `path` is something a preview must not replace: a link (it
    would be written through), a folder, or a file bgbench did not write (its PNG lacks MARK)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise BgbenchError(f"--preview: {path} exists and is not a file bgbench wrote (a link or a folder); "
                           f"move it away, or build without --preview")
    if path.exists():
        try:
            with Image.open(path) as im:
                ours = im.info.get(MARK[0]) == MARK[1]
        except (OSError, ValueError):
            ours = False
        if not ours:
            raise BgbenchError(f"--preview: {path} exists and is not a preview bgbench wrote; move it away, "
                               f"or build without --preview")


def contact_sheet(root: str | Path, split: str = "val", path: Optional[Path] = None, rows: int = ROWS,
                  side: int = SIDE) -> Path:
    """Write the sheet of the built dataset at `root` (one row per image, up to `rows`, classes
    taken in turn) to `path` (default `preview_path`); returns where."""
    layout = discover(root, split=split)
    columns = ["original", "mask", *[v for v in VARIANTS if v in layout.variants]]
    by_variant = {v: {it.image_id: it for it in layout.items(v)} for v in columns if v not in ("mask",)}
    chosen = _in_turn([it.image_id for it in layout.items("original")], rows)
    width = PAD + len(columns) * (side + PAD)
    height = HEADER + PAD + len(chosen) * (side + NAME + PAD)
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for c, name in enumerate(columns):
        draw.text((PAD + c * (side + PAD), 3), name, fill=(0, 0, 0))
    for r, image_id in enumerate(chosen):
        y = HEADER + PAD + r * (side + NAME + PAD)
        draw.text((PAD, y + side), image_id, fill=(0, 0, 0))
        for c, name in enumerate(columns):
            rgb = _cell(layout, by_variant, name, image_id)
            if rgb is None:
                continue
            sheet.paste(Image.fromarray(fit(rgb, side)), (PAD + c * (side + PAD), y))
    target = Path(path) if path is not None else preview_path(root, split)
    refuse_foreign_preview(target)
    info = PngImagePlugin.PngInfo()
    info.add_text(*MARK)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    sheet.save(tmp, format="PNG", pnginfo=info)
    os.replace(tmp, target)  # replaces a link's entry, never writes through it
    return target


def _in_turn(image_ids: List[str], rows: int) -> List[str]:
    """Up to `rows` ids, one class after another (ids are '<class folder>/<stem>')."""
    classes: dict = {}
    for i in sorted(image_ids):
        classes.setdefault(i.split("/", 1)[0], []).append(i)
    return [i for turn in zip_longest(*classes.values()) for i in turn if i is not None][:rows]


def _cell(layout, by_variant, name: str, image_id: str) -> Optional[np.ndarray]:
    if name == "mask":
        if not layout.mask_path(image_id).is_file():
            return None
        m = np.asarray(read_mask(layout.mask_path(image_id)), dtype=bool)
        return np.repeat((m * 255).astype(np.uint8)[..., None], 3, axis=2)
    item = by_variant.get(name, {}).get(image_id)
    return None if item is None else decode_image(item.path)
