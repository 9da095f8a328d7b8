"""Decoding images and masks, with one-line errors for bad files."""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def decode_image(path: Path) -> np.ndarray:
    """Decode `path` to an HxWx3 uint8 array (RGB), or raise DataError naming the file."""
    try:
        with Image.open(path) as im:
            im.load()
            return np.asarray(im.convert("RGB"))
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
        raise DataError(f"cannot read image {path}: {str(e).strip() or type(e).__name__}") from None


def mask_shape(path: Path) -> Tuple[int, ...]:
    """The shape of a .npy mask, read from its header only."""
    try:
        return tuple(np.load(path, mmap_mode="r").shape)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read mask {path}: {e}") from None


def load_mask(path: Path) -> np.ndarray:
    """A 2-D boolean mask from a .npy file of 0/1 values."""
    try:
        m = np.load(path)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read mask {path}: {e}") from None
    if m.ndim == 3 and m.shape[2] in (1, 3):
        m = m[..., 0]
    if m.ndim != 2:
        raise DataError(f"mask {path} has shape {m.shape}; expected H x W")
    return m.astype(bool)


def check_mask_fits(mask_path: Path, image_path: Path, image_hw: Tuple[int, int]) -> None:
    shape = mask_shape(mask_path)
    if tuple(shape[:2]) != tuple(image_hw):
        raise DataError(f"mask {mask_path} is {shape[1]}x{shape[0]} but image {image_path} is "
                        f"{image_hw[1]}x{image_hw[0]}")
