"""Box (and polygon mask) readers: PASCAL VOC / ImageNet XML folders and COCO JSON files.

Both return one `Annotation` per image, keyed by '<class folder>/<stem>' where the source says
which folder the image lives in, and by '<stem>' always; `find` tries the longer key first, so
the same stem in two classes stays apart while flat annotation folders still match.

Coordinates: boxes are (x0, y0, x1, y1) in pixels of the source image, x1/y1 exclusive. VOC
`xmin..xmax` and COCO `[x, y, w, h]` values are taken as they are (floats floored/ceiled to the
pixels they touch); VOC's 1-based convention is not shifted, a one-pixel difference at most.
"""
from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import cv2
import numpy as np

from ..data.manifest import finite_coordinates
from ..errors import DataError
from .functions import Box

Polygon = List[float]  # COCO flat [x0, y0, x1, y1, ...]


@dataclass
class Annotation:
    """Every box given for one image, and the COCO polygons of its first object if there are any."""

    boxes: List[Box] = field(default_factory=list)
    polygons: Optional[List[Polygon]] = None
    error: Optional[str] = None  # the file could not be read: that image is rejected, not the run


def _to_box(x0: float, y0: float, x1: float, y1: float) -> Box:
    return (int(math.floor(x0)), int(math.floor(y0)), int(math.ceil(x1)), int(math.ceil(y1)))


def read_voc_file(path: Path) -> Annotation:
    """All `<object><bndbox>` boxes of one VOC / ImageNet XML file."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise DataError(f"cannot read annotation {path}: {e}") from None
    ann = Annotation()
    for obj in root.iter("object"):
        bb = obj.find("bndbox")
        if bb is None:
            continue
        vals = finite_coordinates(bb.findtext(k) for k in ("xmin", "ymin", "xmax", "ymax"))
        if vals is None:
            raise DataError(f"annotation {path} has a <bndbox> without finite numeric xmin/ymin/xmax/ymax")
        ann.boxes.append(_to_box(*vals))
    return ann


def read_voc_dir(folder: Path) -> Dict[str, Annotation]:
    """Every `<stem>.xml` under `folder`, flat or in class subfolders."""
    out: Dict[str, Annotation] = {}
    for path in sorted(folder.rglob("*.xml")):
        try:
            ann = read_voc_file(path)
        except DataError as e:
            ann = Annotation(error=str(e))
        _add(out, path.relative_to(folder), ann)
    return out


def _add(out: Dict[str, Annotation], name: Path, ann: Annotation) -> None:
    """Key `ann` by '<class folder>/<stem>' when `name` (relative) is in a folder, and by '<stem>'
    always (the first image of a stem keeps it)."""
    if name.parent.name:
        out[f"{name.parent.name}/{name.stem}"] = ann
    out.setdefault(name.stem, ann)


def read_coco(path: Path) -> Dict[str, Annotation]:
    """Boxes and polygon segmentations from a COCO instances file (RLE masks are ignored)."""
    try:
        data = json.loads(path.read_text())
        images = {im["id"]: im["file_name"] for im in data["images"]}
        anns = data.get("annotations", [])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"cannot read COCO file {path}: {e}") from None
    per_image: Dict[int, Annotation] = {i: Annotation() for i in images}
    for a in sorted(anns, key=lambda a: a.get("id", 0)):
        if a.get("image_id") not in per_image or "bbox" not in a:
            continue
        ann = per_image[a["image_id"]]
        xywh = finite_coordinates(a["bbox"]) if isinstance(a["bbox"], list) else None
        if xywh is None:
            ann.error = f"COCO file {path}: annotation {a.get('id')} has a bbox that is not four finite numbers"
            continue
        x, y, w, h = xywh
        ann.boxes.append(_to_box(x, y, x + w, y + h))
        seg = a.get("segmentation")
        if len(ann.boxes) == 1 and isinstance(seg, list) and seg and isinstance(seg[0], list):
            ann.polygons = [list(map(float, p)) for p in seg if len(p) >= 6]
    out: Dict[str, Annotation] = {}
    for image_id, name in sorted(images.items(), key=lambda kv: str(kv[1])):
        _add(out, Path(name), per_image[image_id])
    return out


def load_annotations(path: str | Path) -> Dict[str, Annotation]:
    """A VOC folder (or a single .xml file) or a COCO .json file, chosen by what `path` is."""
    path = Path(path).expanduser()
    if path.is_dir():
        return read_voc_dir(path)
    if path.suffix.lower() == ".json" and path.is_file():
        return read_coco(path)
    if path.suffix.lower() == ".xml" and path.is_file():
        return {path.stem: read_voc_file(path)}
    raise DataError(f"--boxes {path}: expected a folder of VOC/ImageNet .xml files or a COCO .json file")


def find(annotations: Dict[str, Annotation], cls: str, stem: str) -> Optional[Annotation]:
    """The annotation of image `<cls>/<stem>`, or None."""
    return annotations.get(f"{cls}/{stem}") or annotations.get(stem)


def rasterize_polygons(polygons: Sequence[Polygon], height: int, width: int) -> np.ndarray:
    """COCO polygons filled into an HxW bool mask (cv2.fillPoly)."""
    canvas = np.zeros((height, width), np.uint8)
    pts = [np.round(np.asarray(p, np.float64).reshape(-1, 2)).astype(np.int32) for p in polygons]
    if pts:
        cv2.fillPoly(canvas, pts, 1)
    return canvas.astype(bool)
