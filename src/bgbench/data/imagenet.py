"""ImageNet 2012 (ILSVRC-2012 CLS-LOC) on disk, in either of its two common layouts, as a list of images.

- the ILSVRC release (Kaggle's "ImageNet Object Localization" archive):
  `ROOT/ILSVRC/Data/CLS-LOC/{train/<wnid>/, val/}` (val is flat), boxes in
  `ROOT/ILSVRC/Annotations/CLS-LOC/{train/<wnid>/, val/}<stem>.xml`, and `ROOT/LOC_val_solution.csv`
  (`ImageId,PredictionString`, "wnid xmin ymin xmax ymax" per box), which gives a flat val image its class;
- torchvision's (`torchvision.datasets.ImageNet`): `ROOT/{train,val}/<wnid>/<stem>.JPEG`, with the box
  archives' XML folders given apart (`--boxes`: `<wnid>/<stem>.xml` or flat `<stem>.xml`, or either under
  `train/`, `val/`).

The class index of a wnid is its position in ImageNet-1k's standard synset list, the one timm ships
(`timm/data/_info/imagenet_synsets.txt`, read as a file: no torch import), so upstream's
`in_to_in9.json` applies as is. Box files are only located here; reading them is per-image work
(`variants.prepare`), so listing 1.2M training images parses no XML.
"""
from __future__ import annotations

import csv
import importlib.util
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import DataError
from .csv_fields import allow_long_fields
from .inside import RootGuard
from .manifest import finite_coordinates

ILSVRC = "ilsvrc"
TORCHVISION = "torchvision"
VAL_SOLUTION = "LOC_val_solution.csv"
SYNSET_MAPPING = "LOC_synset_mapping.txt"
IMAGENET_CLASSES = 1000
#: The variable naming the user's ImageNet, for the benchmarks that hold masks or images over it.
IMAGENET_ENV = "BGBENCH_IMAGENET"

Box = Tuple[int, int, int, int]
WNID = re.compile(r"^n\d{8}$")


def user_imagenet(imagenet, why: str, folders: str, flag: str = "") -> "ImageNetTree":
    """The user's ImageNet (`open_tree`): the folder `imagenet`, else `$BGBENCH_IMAGENET`; when neither
    names one, one line: `why` the benchmark needs it, then where to point (`flag`: its command-line
    flag too)."""
    given = imagenet or os.environ.get(IMAGENET_ENV)
    if not given:
        raise DataError(f"{why}: set {IMAGENET_ENV}{flag} to your ImageNet folder (torchvision's {folders} or the "
                        f"ILSVRC release)")
    return open_tree(Path(given).expanduser())


@lru_cache(maxsize=1)
def imagenet_synsets() -> Tuple[str, ...]:
    """The 1000 ImageNet-1k wnids in class-index order, from timm's package data."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        raise DataError("timm is not installed; its imagenet_synsets.txt gives ImageNet's class order")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "_info" / "imagenet_synsets.txt"
    wnids = tuple(line.strip() for line in path.read_text().splitlines() if line.strip())
    if len(wnids) != IMAGENET_CLASSES:
        raise DataError(f"{path} lists {len(wnids)} synsets, expected {IMAGENET_CLASSES}")
    return wnids


@dataclass(frozen=True)
class Source:
    """One ImageNet image: its synset, stem, file, and where its boxes may be."""

    wnid: str
    stem: str
    path: Path
    source: str  # path relative to the ImageNet root
    box_files: Tuple[Path, ...] = ()  # candidate XML files, the first that exists is read
    boxes: Optional[Tuple[Box, ...]] = None  # LOC_val_solution.csv's boxes: used where no XML file exists
    box_error: Optional[str] = None  # LOC_val_solution.csv's boxes of this image are not numbers: it is rejected


@dataclass(frozen=True)
class ImageNetTree:
    """A recognised ImageNet root: which layout, and its data and annotation folders."""

    root: Path
    layout: str  # ILSVRC | TORCHVISION
    data: Path  # the folder holding train/ and val/
    annotations: Optional[Path]  # ILSVRC's Annotations/CLS-LOC, or --boxes

    def split_dir(self, split: str) -> Path:
        return self.data / split


def open_tree(root: str | Path, boxes: Optional[str | Path] = None) -> ImageNetTree:
    """Recognise `root` as the ILSVRC release or torchvision's layout, or one clear error."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DataError(f"--imagenet {root} is not a folder")
    boxes_dir = Path(boxes).expanduser() if boxes else None
    if boxes_dir is not None and not boxes_dir.is_dir():
        raise DataError(f"--boxes {boxes_dir} is not a folder (with ImageNet, a folder of the box archives' "
                        f".xml files)")
    for base in (root / "ILSVRC", root):
        data = base / "Data" / "CLS-LOC"
        if data.is_dir():
            _check_synset_mapping(root / SYNSET_MAPPING)
            ann = base / "Annotations" / "CLS-LOC"
            return ImageNetTree(root, ILSVRC, data, boxes_dir or (ann if ann.is_dir() else None))
    if (root / "train").is_dir() or (root / "val").is_dir():
        return ImageNetTree(root, TORCHVISION, root, boxes_dir)
    raise DataError(f"--imagenet {root} is neither ImageNet layout: expected ROOT/ILSVRC/Data/CLS-LOC/ (the ILSVRC "
                    f"release) or ROOT/train/<wnid>/, ROOT/val/<wnid>/ (torchvision's)")


def _check_synset_mapping(path: Path) -> None:
    """The release's LOC_synset_mapping.txt, where present, must list the standard order (labels follow it)."""
    if not path.is_file():
        return
    try:
        listed = [line.split()[0] for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read {path}: {e}") from None
    if listed != list(imagenet_synsets()):
        first = next((k for k, (a, b) in enumerate(zip(listed, imagenet_synsets())) if a != b), min(len(listed), 1000))
        raise DataError(f"{path} does not list ImageNet-1k's 1000 synsets in the standard order (first difference "
                        f"at line {first + 1}); class indices would not match in_to_in9.json")


def _wnid_folders(folder: Path, known: Dict[str, int]) -> List[str]:
    names = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    for name in names:
        if name not in known:
            raise DataError(f"{folder / name}: {name!r} is not an ImageNet-1k wnid (expected n######## folders of the "
                            f"1000 ILSVRC-2012 classes)")
    return names


def _images(folder: Path) -> List[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def _box_files(tree: ImageNetTree, split: str, wnid: str, stem: str) -> Tuple[Path, ...]:
    a = tree.annotations
    if a is None:
        return ()
    if tree.layout == ILSVRC and tree.annotations == tree.data.parent.parent / "Annotations" / "CLS-LOC":
        return (a / split / wnid / f"{stem}.xml",) if split == "train" else (a / split / f"{stem}.xml",)
    return (a / wnid / f"{stem}.xml", a / f"{stem}.xml", a / split / wnid / f"{stem}.xml", a / split / f"{stem}.xml")


#: LOC_val_solution.csv's entry of one image: its wnid, its boxes, and why they are unusable (or None).
Solution = Tuple[str, Tuple[Box, ...], Optional[str]]


def read_val_solution(path: Path, known: Dict[str, int]) -> Dict[str, Solution]:
    """LOC_val_solution.csv: stem -> (wnid, boxes, error). Every box's wnid must be an ImageNet-1k
    class (it gives the image its label); a coordinate that is no finite number is that image's
    error, and rejects it alone. An image listed on two rows is refused, naming both: the release
    lists each image once (all its boxes on one row), and one of two labels would win silently."""
    out: Dict[str, Solution] = {}
    line_of: Dict[str, int] = {}
    allow_long_fields()  # an image's boxes are one field, of any length
    try:
        with open(path, newline="") as f:
            for n, row in enumerate(csv.DictReader(f), start=2):
                values = (row.get("PredictionString") or "").split()
                if not row.get("ImageId") or not values or len(values) % 5:
                    raise DataError(f"{path} line {n}: expected ImageId,PredictionString with 'wnid xmin ymin xmax "
                                    f"ymax' per box")
                wnids = values[0::5]
                for w in wnids:
                    if w not in known:
                        raise DataError(f"{path} line {n}: {w!r} is not an ImageNet-1k wnid")
                image = row["ImageId"]
                if image in line_of:
                    first = out[image][0]
                    raise DataError(f"{path} lists {image} twice, on lines {line_of[image]} ({first}) and {n} "
                                    f"({wnids[0]}); the release lists each image once, all its boxes on one row")
                line_of[image] = n
                out[image] = (wnids[0], *_solution_boxes(path, n, values))
    except (OSError, ValueError, KeyError, csv.Error) as e:
        raise DataError(f"cannot read {path}: {e}") from None
    return out


def _solution_boxes(path: Path, n: int, values: List[str]) -> Tuple[Tuple[Box, ...], Optional[str]]:
    """The boxes of one row's 'wnid xmin ymin xmax ymax ...', or no boxes and the reason when a
    coordinate is not a finite number (`inf`, `nan`, a word)."""
    boxes = []
    for k in range(0, len(values), 5):
        coords = finite_coordinates(values[k + 1:k + 5])
        if coords is None:
            return (), f"{path.name} line {n}: box {' '.join(values[k + 1:k + 5])} is not four finite numbers"
        boxes.append(tuple(int(v) for v in coords))
    return tuple(boxes), None


def list_sources(tree: ImageNetTree, split: str, wnids: Sequence[str]) -> List[Source]:
    """Every image of `split` whose synset is in `wnids`, sorted by (class index, stem).

    Raises DataError for a split folder that is missing, a folder that is no ImageNet-1k wnid, and
    flat val images without LOC_val_solution.csv (their class is unknown).
    """
    known = {w: k for k, w in enumerate(imagenet_synsets())}
    wanted = set(wnids)
    folder = tree.split_dir(split)
    if not folder.is_dir():
        raise DataError(f"--imagenet {tree.root}: no {split}/ folder (expected {folder})")
    out: List[Source] = []
    rel, guard = tree.root, RootGuard(tree.root)
    for wnid in _wnid_folders(folder, known):
        if wnid in wanted:
            out += [Source(wnid, p.stem, guard.check(p), p.relative_to(rel).as_posix(),
                           _box_files(tree, split, wnid, p.stem))
                    for p in _images(folder / wnid)]
    flat = [guard.check(p) for p in _images(folder)]
    if flat:
        solution = _find_solution(tree)
        if solution is None:
            raise DataError(f"{folder} holds {len(flat)} images outside class folders, and no {VAL_SOLUTION} was found "
                            f"in {tree.root} to give their classes")
        table = read_val_solution(solution, known)
        for p in flat:
            if p.stem not in table:
                raise DataError(f"{p}: not listed in {solution}")
            wnid, boxes, error = table[p.stem]
            if wnid in wanted:
                out.append(Source(wnid, p.stem, p, p.relative_to(rel).as_posix(),
                                  _box_files(tree, split, wnid, p.stem), boxes, error))
    return sorted(out, key=lambda s: (known[s.wnid], s.stem))


def _find_solution(tree: ImageNetTree) -> Optional[Path]:
    return next((d / VAL_SOLUTION for d in (tree.root, tree.data.parent.parent.parent) if (d / VAL_SOLUTION).is_file()),
                None)


def is_wnid(name: str) -> bool:
    return bool(WNID.match(name))


def imagenet_folders(data) -> "ImageNetTree | Tuple[str, ...] | None":
    """`data` as ImageNet-style folders, read from folder names only (no image is listed): its
    ImageNet release layout (`imagenet_tree`), else the sorted wnids of a folder of ImageNet class
    folders (`ROOT/<wnid>/`), else None."""
    root = Path(data).expanduser()
    if not root.is_dir():
        return None
    tree = imagenet_tree(root)
    if tree is not None:
        return tree
    subfolders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    return tuple(subfolders) if subfolders and all(is_wnid(n) for n in subfolders) else None


def imagenet_tree(root: Path) -> Optional[ImageNetTree]:
    """An ImageNet release layout at `root`: the ILSVRC archive, or torchvision's split folders of
    wnid folders (checked on the first folders: an IN-9 root has variant folders instead)."""
    if (root / "ILSVRC" / "Data" / "CLS-LOC").is_dir() or (root / "Data" / "CLS-LOC").is_dir():
        return open_tree(root)
    for split in ("val", "train"):
        folder = root / split
        if folder.is_dir():
            names = sorted(p.name for p in folder.iterdir() if p.is_dir())
            if names and all(is_wnid(n) for n in names[:5]):
                return open_tree(root)
    return None
