"""Decoding images and masks, with one-line errors for bad files."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Tuple

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def decode_image(path: Path, size: Optional[Tuple[int, int]] = None,
                 crop: Optional[Tuple[int, int]] = None) -> np.ndarray:
    """Decode `path` to an HxWx3 uint8 array (RGB), or raise DataError naming the file.

    `size` (H, W): resize to it (bilinear, as torchvision's `Resize` of a PIL image), for datasets
    whose own loader resizes (RIVAL10's, to 224 x 224); `crop` (shorter side, crop): torchvision's
    `Resize(shorter side)` then `CenterCrop(crop)`, ImageNet's evaluation crop, after `size` where
    both are given (Hard ImageNet's Resize((256, 256)) then CenterCrop(224)); None feeds the image
    as it is.
    """
    with _opened(path) as im:
        im.load()
        rgb = im.convert("RGB")
        if size is not None and rgb.size != (size[1], size[0]):
            rgb = rgb.resize((size[1], size[0]), Image.BILINEAR)
        if crop is not None:
            rgb = evaluation_crop(*crop)(rgb)
        return np.asarray(rgb)


@contextmanager
def _opened(path: Path) -> Iterator[Image.Image]:
    """The image open in PIL; what PIL cannot read is one DataError naming the file. An image PIL
    refuses to decode because it would fill memory (a few hundred kB of PNG can declare 20000 x
    20000 pixels) is named by PIL's own DecompressionBombError."""
    try:
        with Image.open(path) as im:
            yield im
    except Image.DecompressionBombError as e:
        raise DataError(f"cannot read image {path}: PIL's DecompressionBombError, a decompression bomb "
                        f"({' '.join(str(e).split())[:160]})") from None
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
        raise DataError(f"cannot read image {path}: {str(e).strip() or type(e).__name__}") from None


def image_size(path: Path) -> Tuple[int, int]:
    """(H, W) of an image from its header (nothing decoded), or a DataError naming the file."""
    with _opened(path) as im:
        return im.height, im.width


def evaluation_crop(shorter, crop: int):
    """torchvision's Resize(shorter) then CenterCrop(crop), on a PIL image (imported when first used);
    `shorter` may be an (H, W) size, as Hard ImageNet's masks are resized."""
    from torchvision import transforms
    return transforms.Compose([transforms.Resize(shorter), transforms.CenterCrop(crop)])


def image_shape(item) -> Tuple[int, int, int]:
    """(H, W, 3) of `decode_item(item)`, from the file's header alone (no decode): the reader's size,
    the evaluation crop, or the stored size; an unreadable file raises DataError naming it."""
    size, crop = getattr(item, "size", None), getattr(item, "crop", None)
    if crop is not None:  # the crop comes last (after a reader's size, Hard ImageNet's 256 x 256)
        return int(crop[1]), int(crop[1]), 3
    if size is not None:
        return int(size[0]), int(size[1]), 3
    h, w = image_size(item.path)
    return int(h), int(w), 3


def decode_item(item) -> np.ndarray:
    """A dataset item's image (`Item`: its path, at the size its reader feeds it)."""
    return decode_image(item.path, getattr(item, "size", None), getattr(item, "crop", None))


def object_mask(ref, image_path: Path, image_hw: Tuple[int, int]) -> np.ndarray:
    """The object mask an item's `ref` names, for an image of `image_hw`: a mask file (which must
    fit the image), or a reader with `read(image_hw)` (RIVAL10's masks, resized to the image)."""
    if hasattr(ref, "read"):
        return ref.read(tuple(image_hw))
    check_mask_fits(ref, image_path, image_hw)
    return read_mask(ref)


def mask_shape(path: Path) -> Tuple[int, ...]:
    """The shape of a .npy mask, read from its header only."""
    try:
        return tuple(np.load(path, mmap_mode="r").shape)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read mask {path}: {e}") from None


class BadMask(DataError):
    """A mask file that cannot be used: unreadable, of no 2-D shape, or not the image's size."""

    def __init__(self, path: Path, detail: str):
        super().__init__(f"mask {path}: {detail}")
        self.detail = f"{Path(path).name}: {detail}"


#: The exceptions a broken .npy or image file raises on reading (a pickled array raises ValueError,
#: a truncated one EOFError or ValueError, a corrupt PNG OSError or SyntaxError).
_READ_ERRORS = (OSError, ValueError, EOFError, SyntaxError, UnidentifiedImageError, Image.DecompressionBombError)


def read_mask(path: Path, shape: Optional[Tuple[int, int]] = None) -> np.ndarray:
    """The one mask reader: a .npy (any numeric dtype) or image file as an HxW bool mask (nonzero).

    A 3-D array is accepted only with 1, 3 or 4 channels (the first is used). Everything else
    (unreadable bytes, a pickled or non-numeric array, no or zero-length axes, the wrong size for
    `shape`) raises `BadMask`, which the dataset writer turns into a `bad_mask` reject.
    """
    path = Path(path)
    try:
        if path.suffix.lower() == ".npy":
            m = np.load(path, allow_pickle=False)
        else:
            with Image.open(path) as im:
                m = np.asarray(im.convert("L"))
    except _READ_ERRORS as e:
        raise BadMask(path, f"cannot read it ({str(e).strip() or type(e).__name__})") from None
    if m.dtype.kind not in "biuf":
        raise BadMask(path, f"has dtype {m.dtype}, not numbers")
    if m.ndim == 3 and m.shape[2] in (1, 3, 4):
        m = m[..., 0]
    if m.ndim != 2 or 0 in m.shape:
        raise BadMask(path, f"has shape {m.shape}; expected H x W")
    if shape is not None and m.shape != tuple(shape):
        raise BadMask(path, f"is {m.shape[1]}x{m.shape[0]}, its image is {shape[1]}x{shape[0]}")
    return m != 0


def check_mask_fits(mask_path: Path, image_path: Path, image_hw: Tuple[int, int],
                    mask_hw: Optional[Tuple[int, ...]] = None) -> None:
    """A one-line error unless the mask (of shape `mask_hw` where known, else read from its header)
    is the image's size."""
    shape = mask_shape(mask_path) if mask_hw is None else mask_hw
    if tuple(shape[:2]) != tuple(image_hw):
        raise DataError(f"mask {mask_path} is {shape[1]}x{shape[0]} but image {image_path} is "
                        f"{image_hw[1]}x{image_hw[0]}")
