"""ImageNet's own images, and datasets laid out in ImageNet's class folders, read as evaluation datasets.

Three kinds of folder become a `Layout` with one variant, `original`:

- ImageNet itself, in either release layout (`data.imagenet.open_tree`: the ILSVRC archive with its
  flat val/ and LOC_val_solution.csv, or torchvision's `ROOT/{train,val}/<wnid>/`), read at a split;
- Stylized-ImageNet, which is released in torchvision's layout (`ROOT/val/<wnid>/`), so it reads as
  the first kind;
- a folder of some ImageNet classes, `ROOT/<wnid>/<image>` with no split folder: ImageNet-R's 200
  classes, ImageNet-A's, ImageNet-Sketch's 1000.

The classes are wnids. An ImageNet tree has all 1000, in ImageNet-1k's index order (so a 1000-class
model is scored on its own labels, `class_maps.imagenet_class_map`); a folder of some classes has
those present, sorted (as torchvision's `ImageFolder`, and Whac-A-Mole's `ImageNetR`, number them).

Every image is read as ImageNet's evaluation reads it, `Resize(256)` then `CenterCrop(224)`
(torchvision's transforms on the decoded PIL image: Whac-A-Mole's and ImageNet-X's preprocessing).
An image's id is its file name (`ILSVRC2012_val_00000001.JPEG`), so ImageNet-X's annotations and a
watermarked copy join on it; where file names repeat across classes (ImageNet-R's `art_0.jpg`) it is
`<wnid>/<file name>`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from ..errors import DataError
from .images import IMAGE_SUFFIXES
from .inside import RootGuard
from .imagenet import ImageNetTree, imagenet_folders, imagenet_synsets, list_sources
from .layout import Item, refuse_repeated_ids, utf8_name
from .maskless import ImagesOnlyLayout, hashed
from .facts import IMAGENET

#: ImageNet's standard evaluation crop: (shorter side resized to, centre crop).
EVAL_CROP = (256, 224)
#: The kinds of folder (`ImageNetLayout.source`).
TREE, CLASS_FOLDERS = "imagenet", "class_folders"


@dataclass
class ImageNetLayout(ImagesOnlyLayout):
    """ImageNet-style class folders as a `Layout`: one variant (`original`), no masks."""

    kind = IMAGENET
    source: str = TREE  # TREE (an ImageNet release layout) or CLASS_FOLDERS (ROOT/<wnid>/)
    what = "ImageNet's images"
    mask_hint = "; this job needs the IN-9 layout with fg_mask/ (bgbench build --imagenet makes one)"

    def fingerprint(self) -> str:
        """Names, classes and sizes of the images read (not of the whole tree: a val fingerprint
        does not read train's 1.2M files)."""
        return hashed(self, f"imagenet:{self.source}:{self.split}", (f"{it.image_id}:{it.label}:{it.path.stat().st_size}"
                                                                     for it in self._items["original"]))


def find_imagenet(data, split: Optional[str] = None) -> Optional[ImageNetLayout]:
    """`data` read as ImageNet-style folders (see the module docstring), or None when it is none of
    them (an IN-9 layout, a RIVAL10 release, ...)."""
    found = imagenet_folders(data)
    if isinstance(found, ImageNetTree):
        return imagenet_layout(found, split or "val")
    return None if found is None else class_folder_layout(Path(data).expanduser(), found)


def imagenet_layout(tree: ImageNetTree, split: str) -> ImageNetLayout:
    """An ImageNet tree's images of `split`, every class (a one-line error for a missing split)."""
    wnids = imagenet_synsets()
    index = {w: k for k, w in enumerate(wnids)}
    sources = list_sources(tree, split, wnids)
    if not sources:
        raise DataError(f"no images under {tree.split_dir(split)}")
    found = [(s.path, index[s.wnid], s.wnid) for s in sources]
    return ImageNetLayout(root=tree.root, split=split, classes=wnids, variants=("original",), source=TREE,
                          _items={"original": _items(found)})


def class_folder_layout(root: Path, wnids: Tuple[str, ...]) -> ImageNetLayout:
    """ROOT/<wnid>/<image>: the wnids present (`wnids`, sorted) as the classes (each must be one of ImageNet-1k's)."""
    known = set(imagenet_synsets())
    unknown = [w for w in wnids if w not in known]
    if unknown:
        raise DataError(f"{root / unknown[0]}: {unknown[0]!r} is not an ImageNet-1k wnid (a folder of ImageNet classes "
                        f"holds one n######## folder per class)")
    guard = RootGuard(root)
    found = [(guard.check(p), label, wnid) for label, wnid in enumerate(wnids) for p in _images(root / wnid)]
    if not found:
        raise DataError(f"no images under {root}/<wnid>/")
    return ImageNetLayout(root=root, split="", classes=wnids, variants=("original",), source=CLASS_FOLDERS,
                          _items={"original": _items(found)})


def _images(folder: Path) -> List[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def _items(found: List[Tuple[Path, int, str]]) -> List[Item]:
    """Items in (class, file) order, named by file name, or `<wnid>/<file name>` where names repeat."""
    names = [p.name for p, _, _ in found]
    unique = len(set(names)) == len(names)
    items = [Item(image_id=utf8_name(p) if unique else f"{wnid}/{utf8_name(p)}", label=label, path=p, crop=EVAL_CROP)
             for p, label, wnid in found]
    refuse_repeated_ids(items, "a flat val/ image listed under the class of a class folder holding its name")
    return items
