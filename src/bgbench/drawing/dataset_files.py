"""The files of a recorded run's dataset, found again by folder and image id (for the galleries).

A run records its data root (absolute) and split; an image id is '<class folder>/<stem>', so an
image of any variant or edit level is `ROOT/<folder>/<split>/<class folder>/<stem>.<ext>` and its
mask `ROOT/fg_mask/<split>/<image id>.npy`. A dataset that has moved since is not an error: a
gallery then says which folder it looked in.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from ..data.images import IMAGE_SUFFIXES, decode_image, read_mask
from ..data.layout import MASK_DIR


class DatasetFiles:
    """Image and mask files of one split of a dataset root (folder listings cached)."""

    def __init__(self, root: Optional[str], split: str = "val"):
        self.root = Path(root) if root else None
        self.split = split
        self._listings: Dict[Tuple[str, str], Dict[str, Path]] = {}

    def folder(self, folder: str) -> str:
        """Where a folder's images are looked for (for a note when they are missing)."""
        return str((self.root or Path("?")) / folder / self.split)

    def image(self, folder: str, image_id: str) -> Optional[Path]:
        """The image file of `image_id` in `folder` (a variant or edit level), or None."""
        if self.root is None:
            return None
        cls, _, stem = image_id.partition("/")
        key = (folder, cls)
        if key not in self._listings:
            where = self.root / folder / self.split / cls
            self._listings[key] = {p.stem: p for p in sorted(where.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES} \
                if where.is_dir() else {}
        return self._listings[key].get(stem)

    def mask(self, image_id: str) -> Optional[Path]:
        path = self.root / MASK_DIR / self.split / f"{image_id}.npy" if self.root is not None else None
        return path if path is not None and path.is_file() else None

    def pixels(self, folder: str, image_id: str) -> Optional[np.ndarray]:
        """(H, W, 3) uint8 of an image, or None when its file is gone."""
        path = self.image(folder, image_id)
        return decode_image(path) if path is not None else None

    def mask_pixels(self, image_id: str) -> Optional[np.ndarray]:
        path = self.mask(image_id)
        return read_mask(path) if path is not None else None
