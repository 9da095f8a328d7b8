"""Attribute masks: parts of the object (a rim, a wing, wheels), each with its own mask.

Two formats are read, both through an *attribute source* (`names`, `masks(item, image_hw)`):

- bgbench's, beside the IN-9 layout: `ROOT/attr_mask/<split>/<class>/<stem>.npz`, one uint8 0/1
  array per attribute the image has, named after the attribute (`bgbench synth` writes it). An
  image without a file has no annotated attribute. The names of a dataset are those its files use.
- RIVAL10's (`data.rival10`): 18 attributes per image, masks in the image's `_attr_dict.pkl`.

`masks` returns the attributes an image has (a nonempty mask), as H x W bool arrays the size of
the image; probes evaluate an attribute on the images that have it, as RIVAL10's `AttrDataset`.
The dataset writer writes the .npz files byte for byte the same for the same masks
(`data.writer.write_attribute_masks`: fixed zip timestamps, sorted names), so sharded datasets
merge into the very files an unsharded run writes.
"""
from __future__ import annotations

import functools
import zipfile
import zlib
from pathlib import Path
from typing import Dict, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from ..errors import DataError

ATTR_DIR = "attr_mask"


class AttributeSource(Protocol):
    """Where a dataset's attribute masks come from."""

    @property
    def names(self) -> Tuple[str, ...]: ...

    def masks(self, item, image_hw: Tuple[int, int]) -> Dict[str, np.ndarray]: ...

    def files(self, item) -> Tuple[Path, ...]: ...


def planes_count(names: Sequence[str]) -> int:
    """Bytes a pixel of `packed_masks` takes: one bit an attribute."""
    return max(1, (len(names) + 7) // 8)


def packed_masks(masks: Dict[str, np.ndarray], names: Sequence[str], image_hw: Tuple[int, int]) -> np.ndarray:
    """An image's attribute masks as one (H, W, planes_count) uint8 array: bit a % 8 of byte a // 8
    set where attribute `names[a]` covers the pixel. What the pixel cache keeps of them, so that a
    probe reads a batch's masks as one slice of a map instead of an .npz an image."""
    out = np.zeros((*image_hw, planes_count(names)), dtype=np.uint8)
    for a, name in enumerate(names):
        if name in masks:
            out[..., a >> 3] |= np.asarray(masks[name], dtype=np.uint8) << np.uint8(a & 7)
    return out


def present_attributes(planes: np.ndarray, count: int) -> np.ndarray:
    """(N, count) bool: which attributes each of N images' planes ((N, H, W, P) uint8) has.

    The OR runs over 8-byte words where the image's bytes fill whole words of lcm(P, 8) bytes (a
    224-px image at any P), folded back to P bytes after: five times faster than byte by byte."""
    n, p = planes.shape[0], planes.shape[-1]
    flat = np.ascontiguousarray(planes).reshape(n, -1)
    span = np.lcm(p, 8)
    if flat.shape[1] % span == 0 and flat.shape[1]:
        words = np.bitwise_or.reduce(flat.view(np.uint64).reshape(n, -1, span // 8), axis=1)
        seen = np.bitwise_or.reduce(words.view(np.uint8).reshape(n, span // p, p), axis=1)
    else:
        seen = np.bitwise_or.reduce(flat.reshape(n, -1, p), axis=1)  # (N, P)
    bits = np.unpackbits(seen[:, :, None], axis=2, bitorder="little").reshape(n, p * 8)
    return bits[:, :count].astype(bool)


def unpacked_mask(planes: np.ndarray, a: int) -> np.ndarray:
    """Attribute a's masks (..., H, W) bool from planes (..., H, W, P)."""
    return ((planes[..., a >> 3] >> np.uint8(a & 7)) & np.uint8(1)).astype(bool)


def read_attribute_masks(path: Path, image_hw: Optional[Tuple[int, int]] = None) -> Dict[str, np.ndarray]:
    """name -> H x W bool mask of an .npz; a bad file or a mask of the wrong size is a `DataError`."""
    out = {}
    try:
        with np.load(path, allow_pickle=False) as z:
            for name in z.files:
                m = z[name]
                if m.ndim != 2 or m.dtype.kind not in "biuf":
                    raise DataError(f"attribute mask {name!r} in {path} has shape {m.shape} and dtype {m.dtype}; "
                                    "expected H x W numbers")
                if image_hw is not None and m.shape != tuple(image_hw):
                    raise DataError(f"attribute mask {name!r} in {path} is {m.shape[1]}x{m.shape[0]}, its image "
                                    f"is {image_hw[1]}x{image_hw[0]}")
                out[name] = m != 0
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError) as e:
        # zlib.error: a member's data damaged under an intact directory; NotImplementedError and
        # RuntimeError: a compression method zipfile lacks, an encrypted member
        raise DataError(f"cannot read attribute masks {path}: {str(e).strip() or type(e).__name__}") from None
    return out


def npz_names(path: Path) -> List[str]:
    """The attribute names an .npz holds, from its zip directory alone."""
    try:
        with zipfile.ZipFile(path) as z:
            return [n[:-4] if n.endswith(".npy") else n for n in z.namelist()]
    except (OSError, zipfile.BadZipFile) as e:
        raise DataError(f"cannot read attribute masks {path}: {str(e).strip() or type(e).__name__}") from None


class NpzAttributes:
    """bgbench's attribute layout: ROOT/attr_mask/<split>/<image id>.npz."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def path(self, image_id: str) -> Path:
        return self.folder / f"{image_id}.npz"

    def files(self, item) -> Tuple[Path, ...]:
        """The files an image's masks are read from (present or not): what keys them in the cache."""
        return (self.path(item.image_id),)

    @functools.cached_property
    def names(self) -> Tuple[str, ...]:
        return tuple(sorted({n for p in sorted(self.folder.rglob("*.npz")) for n in npz_names(p)}))

    def masks(self, item, image_hw: Tuple[int, int]) -> Dict[str, np.ndarray]:
        path = self.path(item.image_id)
        if not path.is_file():
            return {}
        return {k: m for k, m in read_attribute_masks(path, image_hw).items() if m.any()}
