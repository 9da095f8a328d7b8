"""The Spurious ImageNet release (Neuhaus et al., ICCV 2023; YanNeu/spurious_imagenet), read as its
own code reads it, beside the user's own ImageNet val images of the same classes.

    ROOT/images/timestamp.txt                 the release's version, an integer on its first line
    ROOT/images/<a>_<b>_<class>_..._<feature>/<image>
                                              75 images per spurious feature, none showing the class object

ROOT may also be the `images/` folder itself. Its loader (`dataset/spurious_dataset.py`,
`SpuriousDataset`) lists every folder of `images/` and every file in it, and takes the folder's
ImageNet class index from the third `_`-separated field of its name and the feature (the neural
PCA component) from the last; `timestamp.txt` is the release's mark (`spurious_score.py` reads it
as an integer). The classes here are the wnids of the class indices present, in ImageNet's index
order (a 1000-class model reads them through `class_maps.wnid_class_map`); an image's id is
`<folder>/<file name>`.

Preprocessing follows the loaders: the spurious images are `Resize(224)` with no crop
(`get_imageNet_augmentation('no_crop')`), fed here as Resize(224) then CenterCrop(224), the same
pixels on the release's square images; ImageNet's val images are `Resize(256)`, `CenterCrop(224)`
(`'test'`). Both are bilinear here, bicubic there (a departure `docs/how-to/benchmarks.md` states).

The ImageNet val images (`get_imagenet_matching_subset`: every val image of an included class)
come from the folder named by `$BGBENCH_IMAGENET` or `imagenet=` (either release layout,
`data.imagenet`), read inside that folder. Checked before any model runs, each a one-line error:
a folder whose name gives no class or feature, a class index outside ImageNet's 1000, a file that
is not an image, an empty folder, a non-integer timestamp, a path that leaves the root, a class
without val images.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import DataError
from .imagenet import IMAGENET_ENV, imagenet_synsets, list_sources, user_imagenet
from .imagenet_folders import EVAL_CROP, TREE, ImageNetLayout
from .inside import RootGuard
from .layout import Item, utf8_name
from .maskless import ImagesOnlyLayout, hashed, image_files, only_original, refuse_split
from .facts import SPURIOUS_IMAGENET as KIND

#: The release's folder of images and its mark.
IMAGES, TIMESTAMP = "images", "timestamp.txt"
#: The spurious images' Resize(224), no crop (`no_crop`), as (shorter side, crop).
SPURIOUS_CROP = (224, 224)
#: The environment variable naming the user's ImageNet folder (Hard ImageNet's too).


@dataclass
class SpuriousImageNetLayout(ImagesOnlyLayout):
    """Spurious ImageNet as a `Layout`: one variant (`original`), its images labelled by class;
    `features[image_id]` is (ImageNet class index, feature) from the image's folder name."""

    kind = KIND
    what = "Spurious ImageNet"
    timestamp: int = 0
    features: Dict[str, Tuple[int, int]] = field(default_factory=dict, repr=False)

    def fingerprint(self) -> str:
        """The release's timestamp and every image's id, label and size."""
        return hashed(self, f"{KIND}:{self.timestamp}", (f"{it.image_id}:{it.label}:{it.path.stat().st_size}"
                                                         for it in self._items["original"]))


def find_spurious_imagenet(data) -> Optional[Path]:
    """The root when `data` is the release (ROOT with `images/timestamp.txt`, or the `images/`
    folder itself with its `timestamp.txt`); None otherwise."""
    root = Path(data).expanduser()
    if not root.is_dir():
        return None
    return root if _images_folder(root) is not None else None


def _images_folder(root: Path) -> Optional[Path]:
    return next((folder for folder in (root / IMAGES, root)
                 if (folder / TIMESTAMP).is_file() and not (folder / "original").is_dir()), None)


def folder_parts(folder: Path) -> Tuple[int, int]:
    """(ImageNet class index, feature) of a folder named as the loader parses it: the third and the
    last `_`-separated fields, both integers; one line for a name that is not."""
    fields = utf8_name(folder).split("_")
    try:
        if len(fields) < 4:
            raise ValueError
        index, feature = int(fields[2]), int(fields[-1])
    except ValueError:
        raise DataError(f"{folder}: not a Spurious ImageNet feature folder (its loader reads the class index from the "
                        f"third '_' field of the name and the feature from the last, e.g. spurious_class_<class>_comp_"
                        f"<feature>)") from None
    if not 0 <= index < 1000:
        raise DataError(f"{folder}: class index {index} is not one of ImageNet's 1000 (0-999)")
    return index, feature


def spurious_imagenet_layout(root: Path, variants: Optional[Sequence[str]] = None,
                             split: Optional[str] = None) -> SpuriousImageNetLayout:
    """The release at `root` (found by `find_spurious_imagenet`), checked; nothing outside `root` is read."""
    root = Path(root)
    folder = _images_folder(root)
    if folder is None:
        raise DataError(f"{root} holds no {IMAGES}/{TIMESTAMP} (the Spurious ImageNet release's mark)")
    only_original(root, variants, "Spurious ImageNet has its images")
    refuse_split(root, split, "Spurious ImageNet")
    guard = RootGuard(root)
    timestamp = _timestamp(guard.check(folder / TIMESTAMP))
    found: List[Tuple[int, int, Path]] = []
    for sub in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
        if not sub.is_dir():
            continue  # the loader lists folders only (timestamp.txt beside them)
        guard.check(sub)
        index, feature = folder_parts(sub)
        images = [guard.check(p) for p in image_files(sub, "Spurious ImageNet's loader reads every file of a feature "
                                                               "folder as an image, and this is not one; move it out")]
        if not images:
            raise DataError(f"{sub}: an empty Spurious ImageNet feature folder (the release has 75 images in each)")
        found += [(index, feature, p) for p in images]
    if not found:
        raise DataError(f"no feature folders of images under {folder} (an empty Spurious ImageNet)")
    wnids = imagenet_synsets()
    indices = sorted({index for index, _, _ in found})
    label = {index: k for k, index in enumerate(indices)}
    items, features = [], {}
    for index, feature, p in sorted(found, key=lambda f: (label[f[0]], f[2].parent.name, f[2].name)):
        image_id = f"{p.parent.name}/{utf8_name(p)}"
        items.append(Item(image_id=image_id, label=label[index], path=p, crop=SPURIOUS_CROP))
        features[image_id] = (index, feature)
    return SpuriousImageNetLayout(root=root, split="", classes=tuple(wnids[i] for i in indices),
                                  variants=("original",), timestamp=timestamp, features=features,
                                  _items={"original": items})


def _timestamp(path: Path) -> int:
    try:
        line = path.read_text(encoding="utf-8").splitlines()[0].strip() if path.stat().st_size else ""
        return int(line)
    except (ValueError, UnicodeDecodeError):
        raise DataError(f"{path}: the release's timestamp is an integer on the first line (spurious_score.py reads "
                        f"it so); this file holds none") from None


def imagenet_val_of(classes: Sequence[str], imagenet=None):
    """The user's ImageNet val images of `classes` (wnids), labelled by their position there, read
    as ImageNet's evaluation reads them (`data.imagenet_folders`): an `ImageNetLayout`. One line for
    a class with no val image (its AUC would compare against nothing)."""
    tree = user_imagenet(imagenet, "Spurious ImageNet is scored against your ImageNet's val images of its classes",
                         "val/", " (or --imagenet)")
    position = {w: k for k, w in enumerate(classes)}
    items = [Item(image_id=s.path.name, label=position[s.wnid], path=s.path, crop=EVAL_CROP)
             for s in list_sources(tree, "val", classes)]
    missing = sorted(set(classes) - {classes[it.label] for it in items})
    if missing:
        raise DataError(f"--imagenet {tree.root}: no val images of {missing[0]}"
                        f"{f' (and {len(missing) - 1} more classes)' if len(missing) > 1 else ''}, a class of the "
                        f"Spurious ImageNet features read; its score compares them against that class's val images")
    return ImageNetLayout(root=tree.root, split="val", classes=tuple(classes), variants=("original",), source=TREE,
                          _items={"original": items})


__all__ = ["IMAGENET_ENV", "KIND", "SpuriousImageNetLayout", "find_spurious_imagenet", "imagenet_val_of",
           "spurious_imagenet_layout"]
