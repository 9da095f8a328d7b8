"""The Salient ImageNet release (Singla & Feizi, ICLR 2022; singlasahil14/salient_imagenet), read as
its own code reads it, over the user's ImageNet training images. Its data and code are under a
non-commercial licence: bgbench ships none of either and reads them where the user has them.

    ROOT/wordnet_dict.py                           {ImageNet class index: wnid}, a Python dict literal
    ROOT/<wnid>/image_names_map.csv                one column per neural feature (its index as the
                                                   header), the ImageNet training images it was drawn on
    ROOT/<wnid>/feature_<k>/<image name>.JPEG      feature k's soft mask of that image (224 x 224, 0-255)

As `inspection_utils.py`'s `SalientImageNet` reads it: an image of a set of features is every name
in their columns (`np.unique`), found at `<ImageNet>/train/<wnid>/<name>.JPEG`, fed
`Resize(256)`, `CenterCrop(224)`; its mask is the pixelwise maximum of its features' masks over
255, times 255 into uint8 (`np.uint8`, which truncates), then the same Resize(256) and
CenterCrop(224) as the image, over 255 (`salient_mask`). The masks are drawn on the 224 crop, so the
source's maximum with a 224 x 224 array of zeros needs them 224 x 224; any other size is refused.
Which features of a class are core and which spurious is the repository's Mechanical Turk table
(`mturk_results/discover_spurious_features.csv`, `utils.MTurk_Results`): `read_annotations`.

This layout's variant `original` is every image any feature of a class lists (what `bgbench eval`
reads: clean accuracy); the classes are the wnids of ROOT's class folders, in ImageNet's index
order. An image's id is `<wnid>/<name>`. Checked before any model runs, each a one-line error: a
`wordnet_dict.py` that is no dict literal of wnids, a class folder it does not list, a missing
`image_names_map.csv`, a path that leaves ROOT or the ImageNet folder, an image missing from
ImageNet's train, and (when read) a missing mask or one whose size is not 224 x 224.
"""
from __future__ import annotations

import ast
import csv
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import DataError
from .images import evaluation_crop
from .imagenet import imagenet_synsets, user_imagenet
from .inside import RootGuard
from .layout import Item, utf8_name
from .maskless import ImagesOnlyLayout, hashed, only_original
from .facts import SALIENT_IMAGENET as KIND

WORDNET_DICT, NAMES_MAP = "wordnet_dict.py", "image_names_map.csv"
#: The Mechanical Turk table: where the repository keeps it, and the names bgbench looks for in ROOT.
ANNOTATIONS = "discover_spurious_features.csv"
ANNOTATION_PLACES = (ANNOTATIONS, f"mturk_results/{ANNOTATIONS}")
#: `SalientImageNet`'s resize_size and crop_size.
RESIZE, CROP = 256, 224
#: `MTurk_Results.core_spurious_labels_dict`: a feature is spurious when at least this many workers
#: answered one of these; else core.
SPURIOUS_ANSWERS, SPURIOUS_VOTES = ("separate_object", "background"), 3


@dataclass
class SalientImageNetLayout(ImagesOnlyLayout):
    """Salient ImageNet as a `Layout`: one variant (`original`), every image its features list;
    `features[wnid]` maps each feature index to the image names its column lists."""

    kind = KIND
    what = "Salient ImageNet"
    holds = "ImageNet's images"
    mask_hint = "; its soft masks per feature are read by `bgbench probe salient_imagenet`"
    class_indices: Tuple[int, ...] = ()
    features: Dict[str, Dict[int, List[str]]] = field(default_factory=dict, repr=False)
    imagenet: Optional[Path] = None
    _paths: Dict[Tuple[str, str], Path] = field(default_factory=dict, repr=False)
    _guard: Optional[RootGuard] = field(default=None, repr=False)

    def image_path(self, wnid: str, name: str) -> Path:
        return self._paths[(wnid, name)]

    def mask_path(self, wnid: str, feature: int, name: str) -> Path:
        """Feature `feature`'s mask of image `name`, inside ROOT, or one line when it is missing."""
        path = self.root / wnid / f"feature_{feature}" / f"{name}.JPEG"
        if not path.is_file():
            raise DataError(f"mask {path} is missing (image_names_map.csv of {wnid} lists {name} under feature "
                            f"{feature})")
        return self._guard.check(path)

    def fingerprint(self) -> str:
        """Every listed (class, feature, image) and each image's size."""
        features = (f"{wnid}:{feature}:{','.join(names)}" for wnid in self.classes
                    for feature, names in sorted(self.features[wnid].items()))
        return hashed(self, KIND, itertools.chain(features, (f"{it.image_id}:{it.path.stat().st_size}"
                                                             for it in self._items["original"])))


def find_salient_imagenet(data) -> Optional[Path]:
    """`data` when it is the release: `wordnet_dict.py` beside a class folder with its
    `image_names_map.csv`; None otherwise."""
    root = Path(data).expanduser()
    if not (root / WORDNET_DICT).is_file():
        return None
    return root if any((p / NAMES_MAP).is_file() for p in root.iterdir() if p.is_dir()) else None


def wordnet_dict(path: Path) -> Dict[int, str]:
    """`wordnet_dict.py` read as a literal (the source `eval`s it; bgbench runs none of it)."""
    try:
        table = ast.literal_eval(path.read_text(encoding="utf-8"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        table = None
    if not isinstance(table, dict) or not all(isinstance(k, int) and isinstance(v, str) for k, v in table.items()):
        raise DataError(f"{path}: not Salient ImageNet's wordnet_dict.py (a Python dict literal of ImageNet class "
                        f"index: wnid)")
    return table


def names_map(path: Path) -> Dict[int, List[str]]:
    """feature index -> the image names of its column (the empty cells of a shorter column left out)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"cannot read {path}: {e}") from None
    if not rows:
        raise DataError(f"{path} is empty (a header of feature indices, then image names)")
    try:
        header = [int(h) for h in rows[0]]
    except ValueError:
        raise DataError(f"{path}: its header is not feature indices ({', '.join(rows[0][:3])} ...)") from None
    out: Dict[int, List[str]] = {h: [] for h in header}
    for row in rows[1:]:
        for h, name in zip(header, row):
            if name:
                out[h].append(name)
    return out


def salient_imagenet_layout(root: Path, variants: Optional[Sequence[str]] = None, split: Optional[str] = None,
                            imagenet=None) -> SalientImageNetLayout:
    """The release at `root` over the user's ImageNet (`imagenet`, else `$BGBENCH_IMAGENET`), checked."""
    only_original(root, variants, "Salient ImageNet has ImageNet's images")
    if split and split != "train":
        raise DataError(f"{root} is Salient ImageNet, drawn on ImageNet's train images; drop --split {split}")
    guard = RootGuard(root)
    table = wordnet_dict(guard.check(root / WORDNET_DICT))
    index_of = {w: k for k, w in table.items()}
    synsets = imagenet_synsets()
    folders = []
    for p in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if p.name == "mturk_results":
            continue
        guard.check(p)
        if p.name not in index_of:
            raise DataError(f"{p}: {utf8_name(p)!r} is not a class of {root / WORDNET_DICT}")
        if synsets[index_of[p.name]] != p.name:
            raise DataError(f"{root / WORDNET_DICT} gives {p.name} index {index_of[p.name]}, ImageNet's index of "
                            f"{synsets[index_of[p.name]]}")
        if not (p / NAMES_MAP).is_file():
            raise DataError(f"{p / NAMES_MAP} is missing (each class folder lists its features' images there)")
        folders.append(p.name)
    tree = user_imagenet(imagenet, "Salient ImageNet holds masks only; its images are your ImageNet's training "
                         "images", "train/")
    train, inside = tree.split_dir("train"), RootGuard(tree.root)
    folders.sort(key=lambda w: index_of[w])
    features, items, paths = {}, [], {}
    for label, wnid in enumerate(folders):
        features[wnid] = names_map(guard.check(root / wnid / NAMES_MAP))
        for name in sorted({n for names in features[wnid].values() for n in names}):
            path = train / wnid / f"{name}.JPEG"
            if not path.is_file():
                raise DataError(f"{path} is missing: Salient ImageNet's {wnid} lists {name}, an ImageNet training "
                                f"image, and your ImageNet ({tree.root}) has no such file")
            paths[(wnid, name)] = inside.check(path)
            items.append(Item(image_id=f"{wnid}/{name}", label=label, path=path, crop=(RESIZE, CROP)))
    if not items:
        raise DataError(f"no class folders of Salient ImageNet under {root}")
    return SalientImageNetLayout(root=root, split="train", classes=tuple(folders), variants=("original",),
                                 class_indices=tuple(index_of[w] for w in folders), features=features,
                                 imagenet=tree.root, _items={"original": items}, _paths=paths, _guard=guard)


def find_annotations(root: Path, given=None) -> Path:
    """The Mechanical Turk table: `given`, else ROOT/discover_spurious_features.csv or
    ROOT/mturk_results/discover_spurious_features.csv; one line when there is none."""
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise DataError(f"--annotations {given}: no such file")
        return path
    for place in ANNOTATION_PLACES:
        if (root / place).is_file():
            return RootGuard(root).check(root / place)
    raise DataError(f"Salient ImageNet's core and spurious labels are its repository's mturk_results/{ANNOTATIONS} "
                    f"(non-commercial licence; bgbench ships none): copy it into {root} or give --annotations FILE")


def read_annotations(path: Path) -> Tuple[Dict[int, List[int]], Dict[int, List[int]]]:
    """(class index -> core features, class index -> spurious features), as `MTurk_Results` labels
    them: a (class, feature) pair is spurious when at least 3 of its workers answered
    'separate_object' or 'background', else core; features in the table's order."""
    wanted = ("Input.class_index", "Input.feature_index", "Answer.main")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in wanted if c not in (reader.fieldnames or ())]
            if missing:
                raise DataError(f"{path}: no column {missing[0]} (not Salient ImageNet's {ANNOTATIONS})")
            votes: Dict[Tuple[int, int], int] = {}
            for row in reader:
                key = (int(float(row["Input.class_index"])), int(float(row["Input.feature_index"])))
                votes[key] = votes.get(key, 0) + (row["Answer.main"] in SPURIOUS_ANSWERS)
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as e:
        raise DataError(f"cannot read {path}: {str(e).strip() or type(e).__name__}") from None
    core, spurious = defaultdict(list), defaultdict(list)
    for (class_index, feature), n in votes.items():
        (spurious if n >= SPURIOUS_VOTES else core)[class_index].append(feature)
    return dict(core), dict(spurious)


def salient_mask(paths: Sequence[Path]) -> np.ndarray:
    """The (C, 224, 224) float32 mask of an image under the features whose masks are `paths`, as
    `SalientImageNet.__getitem__` makes it (C = 1 for grayscale masks, 3 for RGB ones)."""
    from PIL import Image, UnidentifiedImageError
    union = np.zeros((CROP, CROP))
    for path in paths:
        try:
            with Image.open(path) as im:
                mask = np.asarray(im) / 255.
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
            raise DataError(f"cannot read mask {path}: {str(e).strip() or type(e).__name__}") from None
        if mask.shape[:2] != (CROP, CROP) or mask.ndim not in (2, 3) or (mask.ndim == 3 and mask.shape[2] != 3):
            shown = "x".join(str(s) for s in (mask.shape[1::-1] if mask.ndim >= 2 else mask.shape))
            raise DataError(f"mask {path} is {shown}; Salient ImageNet's masks are {CROP}x{CROP} (drawn on the "
                            f"centre crop), one channel or three")
        union = np.maximum(union, mask)
    image = Image.fromarray(np.uint8(union * 255))
    cropped = evaluation_crop(RESIZE, CROP)(image)
    arr = np.asarray(cropped, dtype=np.float32) / 255.
    return arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)


__all__ = ["KIND", "SalientImageNetLayout", "find_annotations", "find_salient_imagenet", "read_annotations",
           "salient_imagenet_layout", "salient_mask"]
