"""The images the report's galleries show: one compressed sheet of thumbnails per gallery, and
full-size copies only of images larger than their thumbnail.

A gallery's shots are packed into one WebP image, its *sheet*: each image at its own size when it
fits a CELL x CELL box (the page enlarges it to the box with CSS `zoom`, pixels kept sharp), else
reduced to fit the box. Each shot on the page is an `<img loading="lazy">` of the sheet that shows
only its own cell (CSS `object-fit: none` and `object-position`, the browser's sprite), so a
gallery of a hundred shots is one file and one request, fetched when it scrolls into view.

Files are named by their content (a sha1 of the file's bytes, or of the pixels), so a sheet or a
full-size copy is written once per report, whatever shows it:

- `figures/thumbs/<sha1>.webp`: a gallery's sheet (lossy WebP, WEBP_QUALITY);
- `figures/full/<sha1>.<ext>`: a dataset file larger than its thumbnail, copied byte for byte, or
  an image made here (a composite, a noisy copy) larger than its thumbnail, as lossless WebP.
  An image no larger than its thumbnail gets no copy: its thumbnail already shows every pixel. The
  copy lives inside the report folder, so a report stands alone: moving or deleting the dataset
  later breaks no link.
"""
from __future__ import annotations

import hashlib
import shutil
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Sequence, Set

import numpy as np
from PIL import Image

from ..data.images import decode_image

THUMB_DIR = "thumbs"
FULL_DIR = "full"
#: The box a thumbnail fits in, in CSS pixels: the page shows every shot at this size.
CELL = 96
#: Cells per row of a sheet.
SHEET_COLUMNS = 12
#: WebP quality of the sheets (lossy: thumbnails are for looking, the full-size copies are exact).
WEBP_QUALITY = 75


#: One shot as the page shows it: its cell in a sheet (`src`, at `x`, `y`, of `width` x `height`
#: pixels), its full-size copy (None when the thumbnail already shows every pixel) and the `zoom`
#: that enlarges a small image to the thumbnail's box; addresses are relative to index.html.
Thumb = namedtuple("Thumb", "src x y width height full zoom", defaults=(None, 1.0))
#: A shot waiting for its sheet: its pixels at display size and its full-size copy's address.
Cell = namedtuple("Cell", "key pixels full")


def fit(rgb: np.ndarray, side: int = CELL) -> np.ndarray:
    """`rgb` reduced (Lanczos, aspect kept) to fit a `side` x `side` box; a smaller image as it is."""
    h, w = rgb.shape[:2]
    if max(h, w) <= side:
        return rgb
    scale = side / max(h, w)
    return np.asarray(Image.fromarray(rgb).resize((max(1, round(w * scale)), max(1, round(h * scale))),
                                                  Image.Resampling.LANCZOS))


@dataclass
class Thumbnails:
    """Writes the galleries' sheets and full-size copies under `figures` (the report's figures folder)."""

    figures: Path
    fulls: Set[str] = field(default_factory=set)  # the full-size copies written (addresses)
    sheets: Set[str] = field(default_factory=set)  # the sheets written (addresses)
    shots: int = 0  # shots placed on sheets

    def of_file(self, path: Path) -> Cell:
        """A dataset image: its thumbnail from its decoded pixels, its file copied as it is when it
        is larger than the thumbnail."""
        key = hashlib.sha1(Path(path).read_bytes()).hexdigest()
        return self._cell(key, decode_image(Path(path)), f"{key}{Path(path).suffix.lower()}",
                          lambda target: shutil.copyfile(path, target))

    def of_array(self, rgb: np.ndarray) -> Cell:
        """An image made for the report (a composite, a noisy copy): (H, W, 3) uint8."""
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        key = hashlib.sha1(repr(rgb.shape).encode() + rgb.tobytes()).hexdigest()
        return self._cell(key, rgb, f"{key}.webp", lambda target: Image.fromarray(rgb).save(target, lossless=True))

    def _cell(self, key: str, rgb: np.ndarray, name: str, write) -> Cell:
        """The shot of `rgb`, with its full-size copy `name` (made by `write`) when it is larger than its thumbnail."""
        full = self._once(FULL_DIR, name, self.fulls, write) if max(rgb.shape[:2]) > CELL else None
        return Cell(key, fit(rgb), full)

    def _once(self, folder: str, name: str, written: Set[str], write) -> str:
        """The address of `figures/<folder>/<name>`, written by `write(target)` the first time only."""
        href = f"{self.figures.name}/{folder}/{name}"
        if href not in written:
            target = self.figures / folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            write(target)
            written.add(href)
        return href

    def sheet(self, cells: Sequence[Cell]) -> List[Thumb]:
        """One sheet of `cells` (a shot shown twice takes one cell), written once by content; each
        cell's `Thumb`, in the order given."""
        if not cells:
            return []
        slots = {key: i for i, key in enumerate(dict.fromkeys(c.key for c in cells))}
        columns = min(SHEET_COLUMNS, len(slots))
        slot_h, slot_w = (max(c.pixels.shape[axis] for c in cells) for axis in (0, 1))
        canvas = np.full((slot_h * -(-len(slots) // columns), slot_w * columns, 3), 255, dtype=np.uint8)
        placed = []  # each cell's (x, y, width, height) on the sheet
        for c in cells:
            row, col = divmod(slots[c.key], columns)
            h, w = c.pixels.shape[:2]
            canvas[row * slot_h:row * slot_h + h, col * slot_w:col * slot_w + w] = c.pixels
            placed.append((col * slot_w, row * slot_h, w, h))
        name = hashlib.sha1(repr(canvas.shape).encode() + canvas.tobytes()).hexdigest() + ".webp"
        href = self._once(THUMB_DIR, name, self.sheets,
                          lambda target: Image.fromarray(canvas).save(target, quality=WEBP_QUALITY, method=4))
        self.shots += len(cells)
        return [Thumb(href, x, y, w, h, c.full, round(CELL / max(h, w), 4)) for c, (x, y, w, h) in zip(cells, placed)]

    @property
    def paths(self) -> List[Path]:
        """Every file written: sheets and full-size copies."""
        base = self.figures.parent
        return [base / p for p in sorted(self.sheets | self.fulls)]
