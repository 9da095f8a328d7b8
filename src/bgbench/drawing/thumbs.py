"""Thumbnails, and full-size copies, of the images the report's galleries show.

Each image is written once per report: its files are named by its content (a sha1 of the file's
bytes, or of the pixels of an image made here, such as a composite), so an image that several
galleries show (an original in the categories and the challenge galleries) is one pair of files.
The full-size copy lives inside the report folder, so a report stands alone: moving or deleting
the dataset later breaks no link.

- `figures/thumbs/<sha1>.jpg`: at most THUMB_SIDE pixels on its longer side, JPEG;
- `figures/full/<sha1>.<ext>`: a dataset file copied byte for byte, or an image made here as PNG.
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict

import numpy as np
from PIL import Image

from ..data.images import decode_image

THUMB_DIR = "thumbs"
FULL_DIR = "full"
#: The longer side of a thumbnail, in pixels (smaller images keep their size).
THUMB_SIDE = 128
JPEG_QUALITY = 85


@dataclass(frozen=True)
class Thumb:
    """One shown image: its thumbnail and full-size copy (addresses relative to index.html) and
    the thumbnail's size."""

    src: str
    full: str
    width: int
    height: int


@dataclass
class Thumbnails:
    """Writes thumbnails and full-size copies under `figures` (the report's figures folder)."""

    figures: Path
    written: Dict[str, Thumb] = field(default_factory=dict)

    def of_file(self, path: Path) -> Thumb:
        """A dataset image: copied as it is, thumbnail from its decoded pixels."""
        data = Path(path).read_bytes()
        key = hashlib.sha1(data).hexdigest()
        if key not in self.written:
            full = self.figures / FULL_DIR / f"{key}{Path(path).suffix.lower()}"
            full.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, full)
            self.written[key] = self._thumb(key, decode_image(Path(path)), full)
        return self.written[key]

    def of_array(self, rgb: np.ndarray) -> Thumb:
        """An image made for the report (a composite, a noisy copy): (H, W, 3) uint8."""
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        key = hashlib.sha1(repr(rgb.shape).encode() + rgb.tobytes()).hexdigest()
        if key not in self.written:
            full = self.figures / FULL_DIR / f"{key}.png"
            full.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rgb).save(full, optimize=True)
            self.written[key] = self._thumb(key, rgb, full)
        return self.written[key]

    def _thumb(self, key: str, rgb: np.ndarray, full: Path) -> Thumb:
        image = Image.fromarray(rgb)
        image.thumbnail((THUMB_SIDE, THUMB_SIDE), Image.Resampling.LANCZOS)
        path = self.figures / THUMB_DIR / f"{key}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, quality=JPEG_QUALITY, optimize=True)
        base = self.figures.parent
        return Thumb(path.relative_to(base).as_posix(), full.relative_to(base).as_posix(), *image.size)

    @property
    def paths(self):
        """Every file written: thumbnails and full-size copies."""
        base = self.figures.parent
        return [base / p for t in self.written.values() for p in (t.src, t.full)]

