"""The one manifest schema that `bgbench synth`, `build` and `edit` write, and its reader.

`ROOT/manifest.csv` has one row per written image (every variant or edit-level folder), so a
row says where that image's pixels came from: its foreground's box, its mask's source, and, for
a mixed image, the background's source image and class. `ROOT/rejects.csv` has one row per
rejected image (or image and level). Both carry a `split` column: writing one split keeps the
rows of the others, and rows are ordered by split, so the files do not depend on which split was
written first.

Boxes are (x0, y0, x1, y1) in pixels of the written image, x1/y1 exclusive, written as
"x0 y0 x1 y1". Job-specific values go into `params`, a JSON object with sorted keys.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .csv_fields import allow_long_fields
from .facts import IN9

Box = Tuple[int, int, int, int]

MANIFEST = "manifest.csv"
REJECTS = "rejects.csv"
MANIFEST_FIELDS = ("split", "folder", "image", "label", "class", "source", "box", "mask_source", "fg_fraction",
                   "bg_image", "bg_class", "bg_fallback", "params")
REJECT_FIELDS = ("split", "image", "source", "folder", "reason", "detail")
#: Decimals of `fg_fraction` (mask area / image area; ImageNet-E's pixel rate).
FRACTION_DECIMALS = 5


def mask_box(mask: np.ndarray) -> Optional[Box]:
    """The tight box of a mask's pixels (end-exclusive), or None for an empty mask."""
    ys, xs = np.nonzero(mask)
    if xs.size == 0:
        return None
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def parse_box(text: str) -> Box:
    x0, y0, x1, y1 = (int(v) for v in text.split())
    return x0, y0, x1, y1


def finite_coordinates(values) -> Optional[List[float]]:
    """Four box coordinates as floats, or None when one is missing, not a number, inf or nan: the
    annotation readers reject such a box's image (`bad_annotation`), never the whole build."""
    try:
        vals = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return vals if len(vals) == 4 and all(math.isfinite(v) for v in vals) else None


def fg_fraction(mask: np.ndarray) -> float:
    return round(float(np.count_nonzero(mask)) / mask.size, FRACTION_DECIMALS)


@dataclass(frozen=True)
class ManifestRow:
    """One written image. `position` (the image's place in its job's sorted list) orders rows."""

    position: int
    folder: str
    image: str  # '<class folder>/<stem>'
    label: int
    source: str = ""  # the source file, relative to the job's input root
    box: Optional[Box] = None
    mask_source: str = ""  # exact | provided | grabcut | coco
    fg_fraction: Optional[float] = None
    bg_image: str = ""
    bg_class: str = ""
    bg_fallback: str = ""
    params: Optional[dict] = None

    def csv_row(self, split: str, classes: Sequence[str]) -> Dict[str, object]:
        return {"split": split, "folder": self.folder, "image": self.image, "label": self.label,
                "class": classes[self.label], "source": self.source,
                "box": "" if self.box is None else " ".join(str(int(v)) for v in self.box),
                "mask_source": self.mask_source, "fg_fraction": "" if self.fg_fraction is None else self.fg_fraction,
                "bg_image": self.bg_image, "bg_class": self.bg_class, "bg_fallback": self.bg_fallback,
                "params": json.dumps(self.params, sort_keys=True) if self.params else ""}

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RejectRow:
    """One rejected image, or one image at one folder (`folder` is '' when the whole image is)."""

    position: int
    image: str
    source: str
    reason: str
    detail: str = ""
    folder: str = ""

    def csv_row(self, split: str) -> Dict[str, object]:
        return {"split": split, "image": self.image, "source": self.source, "folder": self.folder,
                "reason": self.reason, "detail": self.detail}

    def to_json(self) -> dict:
        return asdict(self)


def sort_rows(rows: Iterable[ManifestRow], folders: Sequence[str]) -> List[ManifestRow]:
    """Folder by folder (in `folders` order), then by position: the order every writer uses."""
    order = {f: k for k, f in enumerate(folders)}
    return sorted(rows, key=lambda r: (order[r.folder], r.position))


def sort_rejects(rejects: Iterable[RejectRow], folders: Sequence[str]) -> List[RejectRow]:
    order = {f: k for k, f in enumerate(folders)}
    return sorted(rejects, key=lambda r: (r.position, order.get(r.folder, -1)))


def write_split(path: Path, fields: Sequence[str], split: str, rows: Sequence[Dict[str, object]],
                base: Optional[Path] = None) -> None:
    """Write `rows` of `split` into the CSV at `path`, keeping the rows of other splits of `base`
    (default: `path` itself; a staged table keeps those of the table it will replace).

    Rows are grouped by split in sorted split order, so writing val then train gives the same file
    as train then val.
    """
    base = path if base is None else base
    kept: List[dict] = []
    if base.is_file():
        allow_long_fields()
        with open(base, newline="") as f:
            kept = [r for r in csv.DictReader(f) if r.get("split") != split]
    merged = sorted(kept + list(rows), key=lambda r: str(r.get("split")))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields), extrasaction="ignore", restval="")
        w.writeheader()
        w.writerows(merged)


def read_boxes(root: Path, split: str) -> Optional[Dict[str, Box]]:
    """image id -> box of the original images, from the dataset's records; None when it has none."""
    boxes = _recorded(root, split, "original", "box")
    return None if boxes is None else {k: parse_box(v) for k, v in boxes.items()}


def read_backgrounds(root: Path, split: str, folder: str) -> Optional[Dict[str, str]]:
    """image id -> the class of the background it was pasted on, for the images of a mixed `folder`
    (mixed_rand, mixed_next, mixed_same), from the dataset's manifest; None when it records none."""
    return _recorded(root, split, folder, "bg_class")


def _recorded(root: Path, split: str, folder: str, column: str) -> Optional[Dict[str, str]]:
    """image id -> `column` of the manifest's rows of `split` and `folder` that fill it; None when
    there is no manifest or no such row."""
    manifest = Path(root) / MANIFEST
    if not manifest.is_file():
        return None
    allow_long_fields()
    with open(manifest, newline="") as f:
        found = {_row_id(r): r[column] for r in csv.DictReader(f)
                 if r.get("split") == split and r.get("folder") == folder and r.get(column)}
    return found or None


def _row_id(row: dict) -> str:
    image = row["image"]
    return image if "/" in image else f"{row['class']}/{Path(image).stem}"


def image_groups(layout, variant: str) -> Optional[Dict[str, Union[str, Tuple[str, str]]]]:
    """image id -> group of the images of `variant`: a group dataset's own groups (names); for
    IN-9-layout data, (class, background class) from the manifest, named '<class> on <background>'
    (mixed variants, and ORIGINAL where the dataset records the background it drew, as `bgbench
    synth --correlation` does); None when the data says nothing about backgrounds."""
    if getattr(layout, "groups", None) is not None:  # a group dataset (`data.groups.GroupLayout`)
        return dict(layout.groups)
    if layout.kind != IN9:
        return None
    backgrounds = read_backgrounds(layout.root, layout.split, variant)
    if backgrounds is None:
        return None
    items = layout.items(variant)
    if any(it.image_id not in backgrounds for it in items):
        return None
    return {it.image_id: (layout.classes[it.label], backgrounds[it.image_id]) for it in items}
