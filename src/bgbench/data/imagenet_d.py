"""The ImageNet-D release (Zhang et al., CVPR 2024; chenshuang-zhang/imagenet_d), read as its own code reads it.

    ROOT/{background,texture,material}/<class folder>/<image>
    ROOT/questions/{background,texture,material}.csv      (for VQA models; not read here)

Each nuisance folder is one variant, in the order `evaluate_imagenet_models.py` evaluates them
(`subset_list`: background first). Its loader (`utils/data_loaders_imgnet_id.py`, `ImageNetDLoader`)
lists every class folder of a nuisance and every file in it, and labels an image with its folder's
entry in `preprocessing/imgnet_d2imgnet_id.txt`: the ImageNet-1k indices that count as that class
(`class_maps.imagenet_d_tables`; the release ships no table of its own, so bgbench carries the
repository's two files). Here an image's label is its folder's ImageNet-D index
(`preprocessing/imgnet_d_dir2imgnet_d_id.txt`), and a 1000-class model is scored through
`class_maps.imagenet_d_class_map`, which sends each listed ImageNet index to its folder: the same
decision as the loader's list of indices (no index is listed under two folders).

The classes are all 113 of ImageNet-D's folders (a nuisance holds some of them), so labels are the
same whatever a copy holds. Images are fed as the repository's torchvision models see them:
`weights.transforms()`, Resize(256) then CenterCrop(224) (`utils/models.py`). An image's id is
'<class folder>/<file name>'. ImageNet-D has no split folders and no masks.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..class_maps import imagenet_d_classes
from ..errors import DataError
from .imagenet_folders import EVAL_CROP
from .inside import RootGuard
from .layout import Item, utf8_name
from .maskless import ReleaseLayout, image_files
from .facts import IMAGENET_D

#: ImageNet-D's nuisances, in `evaluate_imagenet_models.py`'s order (`subset_list`).
NUISANCES = ("background", "texture", "material")
#: The release's folder of VQA questions, one of its marks.
QUESTIONS = "questions"


@dataclass
class ImageNetDLayout(ReleaseLayout):
    """ImageNet-D as a `Layout`: one variant per nuisance folder present, no masks, no split."""

    kind = IMAGENET_D
    what = "ImageNet-D"
    variants_are = "its nuisances here are"


def find_imagenet_d(data) -> Optional[Path]:
    """The root when `data` is an ImageNet-D release: a nuisance folder (background, texture,
    material) beside no IN-9 `original/`, with the release's `questions/` folder or at least one of
    ImageNet-D's class folders inside; None otherwise."""
    root = Path(data).expanduser()
    if not root.is_dir() or (root / "original").is_dir():
        return None
    present = [root / n for n in NUISANCES if (root / n).is_dir()]
    if not present:
        return None
    if (root / QUESTIONS).is_dir():
        return root
    known = set(imagenet_d_classes())
    if any(p.is_dir() and p.name in known for folder in present for p in folder.iterdir()):
        return root
    return None


def imagenet_d_layout(root: Path, variants: Optional[Sequence[str]] = None,
                      split: Optional[str] = None) -> ImageNetDLayout:
    """The nuisances of the release at `root` (those named in `variants`, default every one
    present), checked: every folder is one of ImageNet-D's classes, every file an image, every
    nuisance has images; each problem one line naming the path."""
    chosen = ImageNetDLayout.chosen(root, [n for n in NUISANCES if (root / n).is_dir()], variants, split)
    classes = imagenet_d_classes()
    label = {c: k for k, c in enumerate(classes)}
    guard = RootGuard(root)
    return ImageNetDLayout(root=root, split="", classes=classes, variants=tuple(chosen),
                           _items={n: _nuisance_items(root / n, label, guard) for n in chosen})


def _nuisance_items(folder: Path, label: Dict[str, int], guard: RootGuard) -> List[Item]:
    """One nuisance's images, in (class folder, file name) order: the loader's own listing, every
    entry of the folder a class folder of images (hidden entries aside)."""
    items: List[Item] = []
    for cls in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
        if not cls.is_dir():
            raise DataError(f"{cls}: ImageNet-D's {folder.name}/ holds only class folders; move this file out")
        if cls.name not in label:
            raise DataError(f"{cls}: {cls.name!r} is not an ImageNet-D class (its preprocessing/imgnet_d2imgnet_id.txt "
                            f"names {len(label)} class folders: {', '.join(list(label)[:3])}, ...)")
        items += [Item(image_id=f"{cls.name}/{utf8_name(p)}", label=label[cls.name], path=guard.check(p),
                       crop=EVAL_CROP)
                  for p in image_files(cls, "ImageNet-D's loader reads every file of a class folder as an image, "
                                            "and this is not one; move it out")]
    if not items:
        raise DataError(f"no images under {folder}/<class folder>/ (an empty ImageNet-D nuisance)")
    return items
