"""Hard ImageNet's 15 classes, and how a folder is recognised as its release (no image is listed here).

Hard ImageNet (Moayeri, Singla, Feizi, NeurIPS 2022 Datasets and Benchmarks; `mmoayeri/HardImageNet`)
is 15 ImageNet-1k classes with strong spurious cues, released as object masks over ImageNet's own
images. Its loader (`datasets/hard_imagenet.py`) reads the classes from the release's
`meta/hard_imagenet_idx.pkl` (their ImageNet indices, in the order its fine-tuned 15-class heads
number them) and `meta/idx_to_wnid.pkl` (ImageNet index -> WordNet id). The table below is that
list: the paper's Table 1 in its order, which the repository's own figures confirm (`gen_plots.py`
names class_0 dog sled, class_6 balance beam, class_9 hockey puck, class_10 miniskirt and class_11
keyboard space bar), each index's WordNet id as ImageNet-1k numbers it. The release's meta files are
read (as plain data, never run) and must agree with it; as its loader needs both, a release that
lacks one is refused.

Kept apart from the layout (`data.hardimagenet`) so that `data.resolve.class_folders` can name the
classes of a Hard ImageNet root without importing the layout that imports it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

from ..errors import DataError

#: (ImageNet-1k index, WordNet id, name) of the 15 classes, in `hard_imagenet_idx.pkl`'s order.
CLASSES: Tuple[Tuple[int, str, str], ...] = (
    (537, "n03218198", "dog sled"), (379, "n02492660", "howler monkey"), (785, "n04162706", "seat belt"),
    (795, "n04228054", "ski"), (837, "n04356056", "sunglasses"), (433, "n02807133", "swimming cap"),
    (416, "n02777292", "balance beam"), (602, "n03535780", "gymnastics horizontal bar"),
    (706, "n03899768", "patio"), (746, "n04019541", "hockey puck"), (655, "n03770439", "miniskirt"),
    (810, "n04264628", "keyboard space bar"), (890, "n04540053", "volleyball"),
    (981, "n09835506", "baseball player"), (801, "n04251144", "snorkel"),
)
WNIDS: Tuple[str, ...] = tuple(w for _, w, _ in CLASSES)
SPLITS = ("val", "train")  # the loader's default split first
META = "meta"
INDEX_FILE, WNID_FILE = "hard_imagenet_idx.pkl", "idx_to_wnid.pkl"


def _has_meta(root: Path) -> bool:
    """Whether `root` holds either of the release's meta files (`check_meta` then wants both)."""
    return any((root / META / name).is_file() for name in (INDEX_FILE, WNID_FILE))


def find_hard_imagenet(data) -> Optional[Tuple[Path, str]]:
    """(root, split) when `data` is a Hard ImageNet release (a root holding meta/hard_imagenet_idx.pkl
    or meta/idx_to_wnid.pkl, and a val/ or train/ folder of masks) or one of its split folders; None
    otherwise."""
    path = Path(data).expanduser()
    if path.name in SPLITS and _has_meta(path.parent) and path.is_dir():
        return path.parent, path.name
    if _has_meta(path):
        for split in SPLITS:
            if (path / split).is_dir():
                return path, split
        raise DataError(f"{path} holds Hard ImageNet's {META}/ files but no val/ or train/ folder of masks")
    return None


def check_meta(root: Path) -> None:
    """The release's meta files, read as plain data (never run), must list Hard ImageNet's 15
    classes: `hard_imagenet_idx.pkl` their ImageNet indices in order, `idx_to_wnid.pkl` each
    index's WordNet id (the loader's labels come from them). Its loader opens both, so a release
    without either is refused, naming the file."""
    from .attr_dict import read_plain_pickle, shown
    for name, holds in ((INDEX_FILE, "the 15 classes' ImageNet indices"), (WNID_FILE, "ImageNet index -> WordNet id")):
        if not (Path(root) / META / name).is_file():
            raise DataError(f"{Path(root) / META / name} is missing: Hard ImageNet's loader "
                            f"(datasets/hard_imagenet.py) reads {holds} from it; unzip the whole release")
    path = Path(root) / META / INDEX_FILE
    indices = read_plain_pickle(path, "a list of ImageNet class indices")
    want = [k for k, _, _ in CLASSES]
    if not isinstance(indices, (list, tuple)) or [i for i in indices] != want:
        raise DataError(f"{path} lists {shown(indices)}, not Hard ImageNet's 15 ImageNet classes {want}")
    wnids = Path(root) / META / WNID_FILE
    table = read_plain_pickle(wnids, "a dict of ImageNet index -> WordNet id")
    if not isinstance(table, dict):
        raise DataError(f"{wnids} holds a {type(table).__name__}, not a dict of ImageNet index -> WordNet id")
    for index, wnid, name in CLASSES:
        if table.get(index) != wnid:
            raise DataError(f"{wnids} gives ImageNet class {index} ({name}) the WordNet id {shown(table.get(index))}, "
                            f"not ImageNet-1k's {wnid}")
