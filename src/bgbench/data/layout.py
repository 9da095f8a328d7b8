"""The IN-9 release layout, read as is.

    ROOT/<variant>/<split>/<class folder>/<stem>.<ext>
    ROOT/fg_mask/<split>/<class folder>/<stem>.npy

Labels are class-folder positions in sorted order. An image's id is '<class folder>/<stem>', so
the same foreground can be paired across variants and with its mask. Attribute masks, where a
dataset has them, sit in ROOT/attr_mask/<split>/ (`data.attributes`).

`data.in9.discover` reads an IN-9 root into a `Layout`; `data.resolve.resolve_layout` also reads
the RIVAL10 release (`data.rival10`) into the same `Layout` and `Item` shapes, so every probe takes
either.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Dict, List, Optional, Sequence, Tuple

from ..errors import DataError
from .attributes import ATTR_DIR, AttributeSource, NpzAttributes
from .images import IMAGE_SUFFIXES, image_shape
from .inside import RootGuard
from .facts import IN9

MASK_DIR = "fg_mask"
#: The variant folders of the public IN-9 release, in the paper's order. The variant *functions*
#: live in `bgbench.variants` (a layer above); the layout only needs their names.
IN9_VARIANTS = ("original", "only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next")


@dataclass(frozen=True)
class Item:
    image_id: str  # '<class folder>/<stem>'
    label: int
    path: Path
    size: Optional[Tuple[int, int]] = None  # (H, W) the dataset's reader resizes it to; None: as stored
    #: (shorter side, crop): the reader's Resize then CenterCrop, ImageNet's evaluation crop
    #: (`data.imagenet_folders`); None: as stored
    crop: Optional[Tuple[int, int]] = None


@dataclass
class Layout:
    """A validated dataset root: its classes, the variants present, and their images."""

    kind: ClassVar[str] = IN9  # the on-disk format: 'in9' (this layout) or 'rival10'
    root: Path
    split: str
    classes: Tuple[str, ...]
    variants: Tuple[str, ...]
    _items: Dict[str, List[Item]] = field(default_factory=dict, repr=False)
    _fingerprint: Optional[str] = field(default=None, repr=False)

    def items(self, variant: str) -> List[Item]:
        if variant not in self._items:
            if variant not in self.variants:
                raise DataError(f"variant {variant!r} not found under {self.root} "
                                f"(present: {', '.join(self.variants) or 'none'})")
            self._items[variant] = _scan_variant(self.root / variant / self.split, self.classes,
                                                 RootGuard(self.root))
        return self._items[variant]

    @property
    def has_masks(self) -> bool:
        return (self.root / MASK_DIR / self.split).is_dir()

    def mask_path(self, image_id: str) -> Path:
        return self.root / MASK_DIR / self.split / f"{image_id}.npy"

    @property
    def attribute_source(self) -> Optional[AttributeSource]:
        """The dataset's attribute masks (ROOT/attr_mask/<split>/), or None when it has none."""
        folder = self.root / ATTR_DIR / self.split
        return NpzAttributes(folder) if folder.is_dir() else None

    def foregrounds(self) -> List[Tuple[Item, Path]]:
        """Every original image paired with its mask; a clear error for the first one missing."""
        if not self.has_masks:
            raise DataError(f"no {MASK_DIR}/{self.split}/ folder under {self.root}; "
                            f"foreground masks are needed here")
        # Each class folder's masks are listed once and its place checked once (`RootGuard`); a
        # mask is then a name looked up in its listing, and resolved only when it is a link. Why
        # not `mask_path` and `guard.check` per image: their Path arithmetic cost 50 us an image,
        # 0.2 s of every probe's run on IN-9's 4,050 foregrounds (as long as a card's features).
        pairs, guard, folders = [], RootGuard(self.root), {}
        masks = self.root / MASK_DIR / self.split
        for item in self.items("original"):
            cls, _, stem = item.image_id.rpartition("/")
            name = f"{stem}.npy"
            if cls not in folders:
                folder = masks / cls if cls else masks
                try:
                    listing = {e.name: e for e in _listed(folder)}
                except OSError:
                    listing = {}
                folders[cls] = (folder, listing, False)
            folder, listing, checked = folders[cls]
            entry = listing.get(name)
            if entry is None or not entry.is_file():
                raise DataError(f"no mask for {item.path} (expected {folder / name})")
            mask = folder / name
            if not checked or entry.is_symlink():
                guard.check(mask, link=entry.is_symlink())
                folders[cls] = (folder, listing, True)
            pairs.append((item, mask))
        return pairs

    def image_hw(self) -> Optional[Tuple[int, int]]:
        """(H, W) of the images as the model is fed them: the reader's size, else the first image's
        own (read from its header), for the line every job says when it differs from the model's
        input size. None: no image can be read (the job then says what is wrong)."""
        variant = "original" if "original" in self.variants else (self.variants[0] if self.variants else None)
        items = self.items(variant) if variant else []
        if not items:
            return None
        try:
            return image_shape(items[0])[:2]
        except DataError:
            return None

    def fingerprint(self) -> str:
        """The dataset's fingerprint: that of its whole split, whichever variants this layout uses."""
        if self._fingerprint is None:
            self._fingerprint = dataset_fingerprint(self.root, self.split)
        return self._fingerprint


def dataset_fingerprint(root: Path, split: str) -> str:
    """A cheap content fingerprint of one split: names and sizes of every file of every variant
    folder and of the masks. It does not depend on which variants a command reads, so an eval
    (8 variants) and a challenge (2) of the same data carry the same fingerprint.

    Every model run computes it, so on a GPU it is a fixed cost beside a forward of a few seconds:
    the files are listed with `os.scandir` (one `stat` a file, no `Path` objects), 4x faster than
    `Path.rglob` for IN-9's tens of thousands, and hashed in the order and form that rglob gave
    (paths sorted by their parts, symlinked folders not entered, symlinked files by their target)."""
    h = hashlib.sha256()
    for folder in sorted(p for p in Path(root).iterdir() if (p / split).is_dir()):
        for parts, size in sorted(_files_below(os.path.join(folder, split), (folder.name, split))):
            h.update(f"{'/'.join(parts)}:{size}".encode())
    return h.hexdigest()[:16]


def _files_below(top: str, parts: Tuple[str, ...]) -> List[Tuple[Tuple[str, ...], int]]:
    """(path parts below the root, size) of every regular file under `top`, as `Path.rglob('*')`
    with `is_file()` finds them: it does not descend into symlinked folders, and it follows a
    symlinked file to its target (a broken link is no file)."""
    found = []
    with os.scandir(top) as entries:
        for entry in entries:
            here = parts + (entry.name,)
            try:
                if entry.is_dir() and not entry.is_symlink():
                    found.extend(_files_below(entry.path, here))
                    continue
                info = entry.stat()  # follows a symlink, as is_file() does
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((here, info.st_size))
    return found


def utf8_name(path: Path) -> str:
    """A file or folder name that the results store can keep (SQLite text is UTF-8); a name with
    a stray byte is refused here, before any work, rather than when the run is recorded."""
    try:
        path.name.encode("utf-8")
    except UnicodeEncodeError:
        raise DataError(f"{path.parent}: the name {path.name.encode('utf-8', 'surrogateescape')!r} is not valid "
                        f"UTF-8; rename it (image ids are stored as UTF-8 text)") from None
    return path.name


def _scan_variant(split_dir: Path, classes: Sequence[str], guard: RootGuard) -> List[Item]:
    """The images of one variant's split, in (class, file) order; each must lie inside the root (`guard`).

    Listed with `os.scandir`, whose entries know without a `stat` whether they are links and (not
    being links) files: every model run lists its variants, IN-9's 32,400 images for an eval."""
    items = []
    for label, cls in enumerate(classes):
        folder = split_dir / cls
        for entry in _listed(folder):
            suffix = _suffix(entry.name)
            if suffix.lower() in IMAGE_SUFFIXES and entry.is_file():
                path = folder / entry.name
                items.append(Item(image_id=f"{cls}/{utf8_name(path)[:-len(suffix)]}", label=label,
                                  path=guard.check(path, link=entry.is_symlink())))
    refuse_repeated_ids(items, f"an id is the file name without its extension, and names its {MASK_DIR}/ mask")
    return items


def refuse_repeated_ids(items: Sequence[Item], why: str) -> None:
    """One line naming both files when two images get one id (`x.JPEG` and `x.png` in one class
    folder, where an id drops the extension): accuracy would count both while the store keeps one
    prediction per id, the other overwritten. `why` says what the id also names (the mask)."""
    seen: Dict[str, Path] = {}
    for it in items:
        if it.image_id in seen:
            raise DataError(f"{seen[it.image_id]} and {it.path} have one image id {it.image_id!r} ({why}); "
                            f"rename or move one")
        seen[it.image_id] = it.path


def _listed(folder: Path) -> list:
    """A folder's entries in name order (the order `sorted(folder.iterdir())` gives)."""
    with os.scandir(folder) as entries:
        return sorted(entries, key=lambda e: e.name)


def _suffix(name: str) -> str:
    """`Path(name).suffix`: from the last dot, unless the name starts or ends with it."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""
