"""The RIVAL10 release, read as is, into the same `Layout` and `Item` shapes as IN-9.

    ROOT/{train,test}/ordinary/<wnid>_<n>.JPEG
    ROOT/{train,test}/ordinary/<wnid>_<n>_attr_labels.npy    2 x 18: attributes present, changed
    ROOT/{train,test}/ordinary/<wnid>_<n>_merged_mask.JPEG   every attribute's mask together
    ROOT/{train,test}/ordinary/<wnid>_<n>_attr_dict.pkl      attribute -> base64 JPEG mask

As RIVAL10's `LocalRIVAL10` reads it: the class comes from the WordNet id through RIVAL10's two
tables (`class_maps.rival10_tables`); images and masks are fed at 224 x 224 (its `Resize((224,
224))`); the object mask is the dict's `entire-object`; an attribute is on an image when row 0
of its labels says so and its mask is not empty (the images `AttrDataset` evaluates it on).

An item's id is '<RIVAL10 class>/<stem>' and its label the class's RIVAL10 index (truck 0, ...,
bird 9). The split is `test` (RIVAL10's evaluation split) unless the path names a split folder.
Every `_attr_dict.pkl` is read (with the restricted unpickler of `attr_dict`) before any work,
so a file that is not a plain dict of masks stops the job before a model runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..class_maps import rival10_classes, rival10_tables
from ..errors import DataError
from .attr_dict import OBJECT_KEY, PickledMask, decode_mask, read_attr_dict
from .images import IMAGE_SUFFIXES
from .inside import RootGuard
from .layout import Item, Layout, refuse_repeated_ids, utf8_name
from .maskless import hashed, only_original
from .facts import RIVAL10

SPLITS = ("test", "train")  # the first one present is the default
INSTANCES = "ordinary"  # RIVAL10's natural images (its 'superimposed'/'removed' are augmentations)
SIZE = (224, 224)  # LocalRIVAL10's transforms.Resize((224, 224))
#: RIVAL10's 18 attributes, in the order of its `_attr_labels.npy` columns (`local_rival10._ALL_ATTRS`).
ATTRIBUTES = ("long-snout", "wings", "wheels", "text", "horns", "floppy-ears", "ears", "colored-eyes", "tail",
              "mane", "beak", "hairy", "metallic", "rectangular", "wet", "long", "tall", "patterned")
LABELS_SUFFIX, DICT_SUFFIX, MERGED_SUFFIX = "_attr_labels.npy", "_attr_dict.pkl", "_merged_mask"


def find_rival10(data) -> Optional[Tuple[Path, str]]:
    """(root, split) when `data` is a RIVAL10 root (holding <split>/ordinary/) or one of its split
    folders; None otherwise."""
    path = Path(data).expanduser()
    if (path / INSTANCES).is_dir() and path.name in SPLITS:
        return path.parent, path.name
    for split in SPLITS:
        if (path / split / INSTANCES).is_dir():
            return path, split
    return None


def _image_files(folder: Path) -> List[Path]:
    return [p for p in sorted(folder.iterdir()) if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
            and not p.stem.endswith(MERGED_SUFFIX)]


def attr_labels(image: Path) -> Optional[np.ndarray]:
    """The image's 2 x 18 `_attr_labels.npy` (row 0: present, row 1: changed), or None without one."""
    path = image.with_name(image.stem + LABELS_SUFFIX)
    if not path.is_file():
        return None
    try:
        labels = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise DataError(f"cannot read {path}: {str(e).strip() or type(e).__name__}") from None
    if labels.shape != (2, len(ATTRIBUTES)):
        raise DataError(f"{path} has shape {labels.shape}; RIVAL10's is (2, {len(ATTRIBUTES)})")
    return labels


def dict_path(image: Path) -> Path:
    return image.with_name(image.stem + DICT_SUFFIX)


class Rival10Attributes:
    """RIVAL10's attribute masks: the entries of each image's dict labelled present."""

    names: Tuple[str, ...] = ATTRIBUTES

    def files(self, item: Item) -> Tuple[Path, ...]:
        """The image's dict of masks and its labels (which say which are present)."""
        return dict_path(item.path), item.path.with_name(item.path.stem + LABELS_SUFFIX)

    def masks(self, item: Item, image_hw: Tuple[int, int]) -> Dict[str, np.ndarray]:
        path = dict_path(item.path)
        if not path.is_file():
            return {}
        masks, labels = read_attr_dict(path), attr_labels(item.path)
        out = {}
        for k, name in enumerate(ATTRIBUTES):
            if name in masks and (labels is None or labels[0, k]):
                m = decode_mask(masks[name], image_hw, f"{name!r} of {path}")
                if m.any():
                    out[name] = m
        return out


@dataclass
class Rival10Layout(Layout):
    """A RIVAL10 split as a `Layout`: one variant, `original` (the `ordinary` images)."""

    kind = RIVAL10

    def items(self, variant: str) -> List[Item]:
        only_original(self.root, [variant], "RIVAL10 has its images")
        return self._items["original"]

    has_masks = True  # `Layout`'s property, fixed

    def mask_path(self, image_id: str) -> Path:
        raise DataError("a RIVAL10 mask is an entry of the image's _attr_dict.pkl, not a file")

    @property
    def attribute_source(self) -> Rival10Attributes:
        return Rival10Attributes()

    def foregrounds(self) -> List[Tuple[Item, PickledMask]]:
        """Every image with its `entire-object` mask; every dict is read (restricted) first."""
        pairs = []
        for item in self.items("original"):
            path = dict_path(item.path)
            if not path.is_file():
                raise DataError(f"no mask for {item.path} (expected {path})")
            if OBJECT_KEY not in read_attr_dict(path):
                raise DataError(f"{path} has no {OBJECT_KEY!r} mask")
            pairs.append((item, PickledMask(path)))
        return pairs

    def fingerprint(self) -> str:
        return hashed(self, "rival10", (f"{self.split}/{INSTANCES}/{p.name}:{p.stat().st_size}"
                                        for folder in [self.root / self.split / INSTANCES]
                                        for p in sorted(folder.iterdir()) if p.is_file()))


def rival10_layout(root: Path, split: str, variants: Optional[Sequence[str]] = None) -> Rival10Layout:
    """The RIVAL10 split `split` under `root`, checked to hold images, each inside the root; in (class,
    file) order."""
    only_original(root, variants, "RIVAL10 has its images")
    root = Path(root)
    classes, by_wnid, guard = rival10_classes(), rival10_tables()[1], RootGuard(root)
    items = []
    for p in map(guard.check, _image_files(root / split / INSTANCES)):
        wnid = utf8_name(p).split("_")[0]
        if wnid not in by_wnid:
            raise DataError(f"{p}: {wnid!r} is not one of the 20 ImageNet classes of RIVAL10's tables")
        label = by_wnid[wnid]
        items.append(Item(image_id=f"{classes[label]}/{p.stem}", label=label, path=p, size=SIZE))
    refuse_repeated_ids(items, "an id is the file name without its extension, and names its _attr_dict.pkl")
    if not items:
        raise DataError(f"no images under {root / split / INSTANCES} (empty dataset)")
    return Rival10Layout(root=root, split=split, classes=classes, variants=("original",),
                         _items={"original": sorted(items, key=lambda it: (it.label, it.path.name))})
