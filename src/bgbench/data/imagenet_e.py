"""The ImageNet-E release (Li et al., CVPR 2023; alibaba/easyrobust `benchmarks/imagenet-e`), read
as it is laid out.

    ImageNet-E/labels.txt                  '<ImageNet val file name>\\t<ImageNet class index>' per line
    ImageNet-E/ori/<stem>.JPEG             the unedited ImageNet val images
    ImageNet-E/{rec,20_smooth,20_hard,20_adv,random_bg}/<stem>.png   background edits
    ImageNet-E/full/<stem>.JPEG, ImageNet-E/{01,008,005}/<stem>.png  size edits
    ImageNet-E/rp/<stem>.png, ImageNet-E/rd/<stem>.png               position and direction
    ImageNet-E/vis.py, ImageNet-E/eval.py  (the release's own scripts; not read)

The release is one archive on Google Drive linked from easyrobust's README; the repository holds no
code that reads it. The layout is the one third-party code reads (gabrielkasmi/spectral-attribution:
`utils/helpers.py` `retrieve_edited_samples`, every folder but `ori` and `full` holding
'<stem>.png', those two '<stem>.JPEG'; `scripts/*.py` `read_label`, labels.txt split at a tab;
`notebooks/1-plots-spectral-decomposition.ipynb`, an `os.listdir` of the root, which names the
folders above). Eleven edit folders beside `ori` are the paper's eleven kinds of edit (its appendix
A); which folder is which of Table 1's columns is read from their names (`LEVELS`): bgbench names
each level as its own edits name the same level (`bgbench edit`), so the two sit in one table.

Each folder is one variant; an image's id is its stem, the same in every folder, so each level is
paired with `original` image by image. The label is labels.txt's ImageNet index and the classes are
ImageNet's 1000 (a 1000-class model is scored on its own top-1, the paper's top-1 accuracy). Images
are fed through ImageNet's evaluation crop, Resize(256) then CenterCrop(224), as the code that reads
the release feeds them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..class_maps import imagenet_wnids
from ..errors import DataError
from .images import IMAGE_SUFFIXES
from .imagenet_folders import EVAL_CROP
from .inside import RootGuard
from .layout import Item, utf8_name
from .maskless import ReleaseLayout
from .facts import IMAGENET_E as KIND, IMAGENET_E_LEVELS

LABELS = "labels.txt"
ORIGINAL_FOLDER = "ori"
LEVELS = IMAGENET_E_LEVELS
FOLDER_OF = {variant: folder for folder, variant, _ in LEVELS}


@dataclass
class ImageNetELayout(ReleaseLayout):
    """The release as a `Layout`: a variant per level folder present, no masks, no split."""

    kind = KIND
    what = "the ImageNet-E release"
    variants_are = "its levels here are"


def find_imagenet_e(data) -> Optional[Path]:
    """The root when `data` is the release: `labels.txt` beside `ori/` and at least one of its edit
    folders (and no IN-9 `original/`); None otherwise."""
    root = Path(data).expanduser()
    if not (root / LABELS).is_file() or not (root / ORIGINAL_FOLDER).is_dir() or (root / "original").is_dir():
        return None
    return root if any((root / folder).is_dir() for folder, _, _ in LEVELS[1:]) else None


def imagenet_e_layout(root: Path, variants: Optional[Sequence[str]] = None,
                      split: Optional[str] = None) -> ImageNetELayout:
    """The levels of the release at `root` (those named in `variants`, default every one present),
    each holding every image labels.txt lists; each problem one line naming the path."""
    chosen = ImageNetELayout.chosen(root, [variant for folder, variant, _ in LEVELS if (root / folder).is_dir()],
                                    variants, split)
    labels = read_labels(root / LABELS)
    guard = RootGuard(root)
    return ImageNetELayout(root=root, split="", classes=imagenet_wnids(), variants=tuple(chosen),
                           _items={v: _level_items(root, FOLDER_OF[v], labels, guard) for v in chosen})


def read_labels(path: Path) -> Dict[str, int]:
    """labels.txt: file stem -> ImageNet class index, in the file's order; a line that is not
    '<file name>\\t<index 0-999>', a name with a folder in it, or a name listed twice is one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read ImageNet-E's labels ({type(e).__name__})") from None
    out: Dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, _, label = line.rstrip("\r").partition("\t")
        name = name.strip()
        if not name or not label.strip().isdigit() or not 0 <= int(label) < len(imagenet_wnids()):
            raise DataError(f"{path}:{number}: expected '<image file name><TAB><ImageNet class index 0-999>', "
                            f"got {line[:80]!r}")
        if "/" in name or "\\" in name or name in (".", ".."):
            raise DataError(f"{path}:{number}: {name!r} names a path; ImageNet-E's labels name files of its "
                            f"level folders")
        stem = Path(name).stem
        if stem in out:
            raise DataError(f"{path}:{number}: {name!r} is listed twice")
        out[stem] = int(label)
    if not out:
        raise DataError(f"{path} lists no images")
    return out


def _level_items(root: Path, folder: str, labels: Dict[str, int], guard: RootGuard) -> List[Item]:
    """A level's images in labels.txt's order: one image file per listed stem, and no image the
    labels do not list."""
    directory = root / folder
    files: Dict[str, Path] = {}
    for p in sorted(directory.iterdir()):
        if p.name.startswith(".") or p.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        stem = p.stem
        if stem in files:
            raise DataError(f"{p}: {files[stem].name} is the same image of ImageNet-E's {folder}/; keep one")
        if stem not in labels:
            raise DataError(f"{p}: not listed in {root / LABELS}, so it has no label")
        files[stem] = p
    items = []
    for stem, label in labels.items():
        path = files.get(stem)
        if path is None or not path.is_file():
            suffix = ".JPEG" if folder in (ORIGINAL_FOLDER, "full") else ".png"
            raise DataError(f"{directory / (stem + suffix)} is missing: {root / LABELS} lists {stem} and every "
                            f"ImageNet-E folder holds each listed image")
        items.append(Item(image_id=utf8_name(path).rsplit(".", 1)[0], label=label, path=guard.check(path),
                          crop=EVAL_CROP))
    return items
