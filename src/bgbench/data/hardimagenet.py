"""The Hard ImageNet release, read as its loader reads it, over the user's own ImageNet.

    ROOT/meta/hard_imagenet_idx.pkl             the 15 classes' ImageNet indices (`hardimagenet_classes`)
    ROOT/meta/idx_to_wnid.pkl                   ImageNet index -> WordNet id
    ROOT/{val,train}/<wnid>_<ImageNet file>     one object mask per image, named after it

The release holds masks only; the images are ImageNet's, found as `datasets/hard_imagenet.py`
(mmoayeri/HardImageNet) finds them: mask `<wnid>_<name>` belongs to `<split>/<wnid>/<name>` of
ImageNet (lines 56-62). ImageNet is the folder named by `$BGBENCH_IMAGENET` (or `imagenet=`), in
either release layout bgbench reads (`data.imagenet`: torchvision's class folders, or the ILSVRC
archive with its flat val/ and LOC_val_solution.csv); without it, the job says so in one line.

As the loader feeds them (`augmentations.standard_resize_center_crop`): image and mask are both
`Resize((256, 256))` (bilinear, aspect not kept) then `CenterCrop(224)`, and the mask is its first
channel, nonzero = object (line 71). The label is the class's position in the 15 (its fine-tuned
heads' label, `ft=True`); a 1000-class model reads the dataset through each class's ImageNet
index (`class_maps.wnid_class_map`), which is the loader's `ft=False` label, the model's argmax
over all 1000 classes against the true class. An item's id is `<wnid>/<ImageNet file stem>`.

Checked before any model runs, each a one-line error: a mask whose name is no `<wnid>_<file>`, a
class that is not one of the 15, a mask without its ImageNet image, a mask whose size is not its
image's (a mask of another image, or a resized copy of ImageNet), meta files that list other
classes. Masks are read inside ROOT and images inside the ImageNet folder (`RootGuard` each).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import DataError
from .hardimagenet_classes import CLASSES, META, WNIDS, check_meta, find_hard_imagenet
from .images import evaluation_crop, image_size
from .imagenet import IMAGENET_ENV, list_sources, user_imagenet
from .inside import RootGuard
from .layout import Item, Layout, utf8_name
from .maskless import hashed, only_original
from .facts import HARD_IMAGENET as KIND

#: The environment variable naming the user's ImageNet folder.
RESIZE = (256, 256)  # standard_resize_center_crop: Resize((256, 256)), then
CROP = 224  # CenterCrop(224)
HAS = "Hard ImageNet has ImageNet's images"


class HardImageNetMask:
    """One image's object mask, read on `read` as the loader reads it: Resize((256, 256)),
    CenterCrop(224), first channel, nonzero (torchvision's transforms on the PIL image, as
    `standard_resize_center_crop` applies them)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def read(self, image_hw: Tuple[int, int]) -> np.ndarray:
        from PIL import Image, UnidentifiedImageError
        try:
            with Image.open(self.path) as im:
                im.load()
                cropped = evaluation_crop(RESIZE, CROP)(im)
                arr = np.asarray(cropped)
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
            raise DataError(f"cannot read mask {self.path}: {str(e).strip() or type(e).__name__}") from None
        mask = (arr[..., 0] if arr.ndim == 3 else arr) != 0
        if mask.shape != tuple(image_hw):
            raise DataError(f"mask {self.path} reads as {mask.shape[1]}x{mask.shape[0]}, its image as "
                            f"{image_hw[1]}x{image_hw[0]}")
        return mask

    def __repr__(self) -> str:
        return f"HardImageNetMask({str(self.path)!r})"


@dataclass
class HardImageNetLayout(Layout):
    """A Hard ImageNet split as a `Layout`: one variant, `original` (ImageNet's images), its masks."""

    kind = KIND
    imagenet: Optional[Path] = None
    _masks: Dict[str, Path] = field(default_factory=dict, repr=False)
    _checked: bool = field(default=False, repr=False)

    def items(self, variant: str) -> List[Item]:
        only_original(self.root, [variant], HAS)
        return self._items["original"]

    has_masks = True  # `Layout`'s property, fixed

    def mask_path(self, image_id: str) -> Path:
        return self._masks[image_id]

    attribute_source = None  # `Layout`'s property, fixed

    def foregrounds(self) -> List[Tuple[Item, HardImageNetMask]]:
        """Every image with its mask; each mask's size is checked against its image's first (headers only)."""
        if not self._checked:
            for it in self.items("original"):
                check_size(self._masks[it.image_id], it.path)
            self._checked = True
        return [(it, HardImageNetMask(self._masks[it.image_id])) for it in self.items("original")]

    def fingerprint(self) -> str:
        """The masks' names and sizes, and their images' (what the probes read)."""
        return hashed(self, f"{KIND}:{self.split}", (f"{it.image_id}:{self._masks[it.image_id].stat().st_size}:"
                                                     f"{it.path.stat().st_size}" for it in self.items("original")))


def check_size(mask: Path, image: Path) -> None:
    """A mask is drawn on its image: the same width and height, or one line naming both."""
    try:
        mh, mw = image_size(mask)
    except DataError:
        raise DataError(f"cannot read mask {mask}: not an image") from None
    ih, iw = image_size(image)
    if (mh, mw) != (ih, iw):
        raise DataError(f"mask {mask} is {mw}x{mh} but its ImageNet image {image} is {iw}x{ih}: not this image's "
                        f"mask (Hard ImageNet's masks are drawn on ImageNet's full-size images)")


def mask_name_parts(path: Path) -> Tuple[str, str]:
    """(wnid, ImageNet file name) of a mask named `<wnid>_<ImageNet file name>` (the loader's lines
    58-60); one line for a name that is not, or a class not among the 15."""
    wnid, sep, name = utf8_name(path).partition("_")
    if not sep or not name or not (len(wnid) == 9 and wnid[0] == "n" and wnid[1:].isdigit()):
        raise DataError(f"{path}: not a Hard ImageNet mask name (<wnid>_<ImageNet file>, e.g. "
                        f"n03218198_ILSVRC2012_val_00000293.JPEG)")
    if wnid not in WNIDS:
        raise DataError(f"{path}: {wnid} is not one of Hard ImageNet's 15 classes "
                        f"({', '.join(name for _, _, name in CLASSES)})")
    return wnid, name


def hard_imagenet_layout(root: Path, split: str, variants: Optional[Sequence[str]] = None,
                         imagenet=None) -> HardImageNetLayout:
    """The Hard ImageNet split `split` under `root`, its images from the user's ImageNet (`imagenet`, else
    `$BGBENCH_IMAGENET`)."""
    only_original(root, variants, HAS)
    root = Path(root)
    folder = root / split
    if not folder.is_dir():
        raise DataError(f"{root} has no {split}/ folder of Hard ImageNet masks")
    check_meta(root)
    guard = RootGuard(root)
    masks = [guard.check(p) for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")]
    if not masks:
        raise DataError(f"no masks under {folder} (empty dataset)")
    named = [(mask_name_parts(p), p) for p in masks]
    tree = user_imagenet(imagenet, "Hard ImageNet holds object masks only; its images are your ImageNet's",
                         "train/, val/")
    wanted = sorted({wnid for (wnid, _), _ in named})
    images = {(s.wnid, s.path.name): s.path for s in list_sources(tree, split, wanted)}
    label = {wnid: k for k, wnid in enumerate(WNIDS)}
    items, by_id = [], {}
    for (wnid, name), mask in named:
        image = images.get((wnid, name))
        if image is None:
            raise DataError(f"mask {mask} has no ImageNet image {split}/{wnid}/{name} under {tree.root} "
                            f"(Hard ImageNet's {split} masks are drawn on ImageNet's {split} images)")
        item = Item(image_id=f"{wnid}/{Path(name).stem}", label=label[wnid], path=image, size=RESIZE,
                    crop=(RESIZE[0], CROP))
        if item.image_id in by_id:
            raise DataError(f"masks {by_id[item.image_id]} and {mask} give one image id {item.image_id!r} (an id is "
                            f"<wnid>/<file name without its extension>); rename or move one")
        items.append(item)
        by_id[item.image_id] = mask
    items.sort(key=lambda it: (it.label, it.image_id))
    return HardImageNetLayout(root=root, split=split, classes=WNIDS, variants=("original",), imagenet=tree.root,
                              _items={"original": items}, _masks=by_id)


__all__ = ["HardImageNetLayout", "HardImageNetMask", "IMAGENET_ENV", "KIND", "META", "find_hard_imagenet",
           "hard_imagenet_layout"]
