"""`bgbench build`, per image: decode, check the annotation, preprocess, the Appendix A filters,
GrabCut, and the variants that need no donor.

This is the work a worker (or a shard) does on its own images. It writes `original`, the
background-only and foreground-only variants, `bg_blurred` and the mask, and returns what the
global steps (balance, donors, the mixed variants) need to know about the image; or a reject.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from ..data import manifest as M
from ..data.images import IMAGE_SUFFIXES
from ..data.manifest import Box
from ..data.writer import EMPTY_MASK, Rejected, Target, read_image, read_mask_or_reject
from ..errors import DataError
from .annotations import Annotation, rasterize_polygons, read_voc_file
from .grabcut import grabcut_mask
from .preprocess import Preprocess
from .registry import get_variant, list_variants

MIN_BOX_KEPT = 0.5  # Appendix A: at least half of the box survives the crop
MAX_BOX_COVER = 0.9  # ... and it covers at most 90% of the crop
BOX_TOLERANCE = 1  # pixels a box may stick out of its image (annotation rounding)

# rejects.csv reasons of this step (besides the writer's unreadable_image and bad_mask)
UNSUPPORTED = "unsupported_file"
MISSING_ANNOTATION = "missing_annotation"
BAD_ANNOTATION = "bad_annotation"
SEVERAL_BOXES = "several_boxes"
BOX_OUTSIDE = "box_outside_image"
IMAGE_TOO_SMALL = "image_too_small"
BOX_CROPPED = "box_cropped"
BOX_TOO_LARGE = "box_too_large"
GRABCUT_FAILED = "grabcut_failed"


@dataclass(frozen=True)
class Task:
    index: int  # position in the sorted list of every input file
    image_id: str  # '<class>/<stem>'
    label: int
    path: Path
    source: str  # path relative to --images
    annotation: Optional[Annotation]
    mask_path: Optional[Path]
    box_files: Tuple[Path, ...] = ()  # read here, the first that exists, before `annotation`
    extra: Optional[dict] = None  # recorded in the manifest's params (ImageNet: wnid, imagenet_index)


@dataclass(frozen=True)
class Settings:
    preprocess: Preprocess
    seed: int
    tries: int
    target: Target
    variants: Tuple[str, ...] = tuple(list_variants())
    needs_box: bool = True  # False (in9l): every readable image, no box, no mask, `original` only


@dataclass(frozen=True)
class Prepared:
    """An image that passed the filters; its own variants and mask are written."""

    index: int
    image_id: str
    label: int
    source: str
    source_box: Optional[Box]  # None: built without a box (in9l)
    box: Optional[Box]
    box_kept: Optional[float]
    mask_source: str  # grabcut | provided | coco | '' (no mask)
    fg_fraction: Optional[float]
    size: Tuple[int, int]  # (height, width) after preprocessing: donors must match it
    extra: Optional[dict] = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Prepared":
        boxes = {k: None if d[k] is None else tuple(d[k]) for k in ("source_box", "box")}
        return cls(**{**d, **boxes, "size": tuple(d["size"])})


def own_variants(variants: Sequence[str]) -> list:
    """The variants of `variants` an image renders from itself alone."""
    return [n for n in variants if get_variant(n).donor is None]


def prepare(task: Task, s: Settings) -> Union[Prepared, M.RejectRow]:
    """Pass 1 for one image: `Prepared` (files written), or a reject row."""
    try:
        if task.path.suffix.lower() not in IMAGE_SUFFIXES:
            raise Rejected(UNSUPPORTED, f"suffix {task.path.suffix or '(none)'} is not an image type")
        if not s.needs_box:
            return _original_only(task, s)
        image, mask, prepared = _filtered(task, s)
    except Rejected as e:
        return M.RejectRow(task.index, task.image_id, task.source, e.reason, e.detail)
    for name in own_variants(s.variants):
        s.target.save_image(name, task.image_id, get_variant(name).render(image, mask, prepared.box))
    s.target.save_mask(task.image_id, mask)
    return prepared


def _original_only(task: Task, s: Settings) -> Prepared:
    """in9l: the preprocessed image as it is, whatever its boxes (none, several or broken)."""
    image = read_image(task.path)
    try:
        image = s.preprocess.image(image)
    except ValueError as e:
        raise Rejected(IMAGE_TOO_SMALL, str(e)) from None
    s.target.save_image("original", task.image_id, image)
    return Prepared(task.index, task.image_id, task.label, task.source, None, None, None, "", None,
                    image.shape[:2], task.extra)


def _annotation(task: Task) -> Optional[Annotation]:
    """The first of the task's box files that exists (an unreadable one is an error of this image
    only), else its annotation (ImageNet val: LOC_val_solution.csv's boxes)."""
    for path in task.box_files:
        if path.is_file():
            try:
                return read_voc_file(path)
            except DataError as e:
                return Annotation(error=str(e))
    return task.annotation


def _checked_box(task: Task) -> Box:
    ann = _annotation(task)
    if ann is not None and ann.error:
        raise Rejected(BAD_ANNOTATION, ann.error)
    if ann is None or not ann.boxes:
        raise Rejected(MISSING_ANNOTATION, "no annotation" if ann is None else "annotation has no box")
    if len(ann.boxes) > 1:
        raise Rejected(SEVERAL_BOXES, f"{len(ann.boxes)} boxes")
    return ann.boxes[0]


def _inside(box: Box, h: int, w: int) -> Box:
    """The box clipped to the image, allowing `BOX_TOLERANCE` pixels of annotation rounding."""
    t = BOX_TOLERANCE
    clipped = (max(0, box[0]), max(0, box[1]), min(w, box[2]), min(h, box[3]))
    # an empty box clips to an empty one, so the second line refuses it too
    if box[0] < -t or box[1] < -t or box[2] > w + t or box[3] > h + t or \
            clipped[2] <= clipped[0] or clipped[3] <= clipped[1]:
        raise Rejected(BOX_OUTSIDE, f"box {box} in a {w}x{h} image")
    return clipped


def _source_mask(task: Task, h: int, w: int) -> Tuple[Optional[np.ndarray], str]:
    """A provided or COCO mask at the source resolution, and its source name."""
    if task.mask_path is not None:
        return read_mask_or_reject(task.mask_path, (h, w)), "provided"
    if task.annotation is not None and task.annotation.polygons:  # COCO only: box files carry none
        return rasterize_polygons(task.annotation.polygons, h, w), "coco"
    return None, "grabcut"


def _filtered(task: Task, s: Settings) -> Tuple[np.ndarray, np.ndarray, Prepared]:
    """The preprocessed image and mask of an image that passes every filter, or `Rejected`."""
    raw_box = _checked_box(task)
    image = read_image(task.path)
    h, w = image.shape[:2]
    sb = _inside(raw_box, h, w)
    src_mask, mask_source = _source_mask(task, h, w)
    pre = s.preprocess
    try:
        _, _, _, _, oh, ow = pre.output_size(h, w)
    except ValueError as e:
        raise Rejected(IMAGE_TOO_SMALL, str(e)) from None
    box, kept = pre.box(sb, h, w)
    if box is None or kept < MIN_BOX_KEPT:
        raise Rejected(BOX_CROPPED, f"{kept:.0%} of the box remains after the crop")
    cover = (box[2] - box[0]) * (box[3] - box[1]) / (oh * ow)
    if cover > MAX_BOX_COVER:  # so only_bg_t always has a strip: only a box covering everything leaves none
        raise Rejected(BOX_TOO_LARGE, f"the box covers {cover:.0%} of the image")
    image = pre.image(image)
    if src_mask is not None:
        mask = pre.mask(src_mask)
        if not mask.any():
            raise Rejected(EMPTY_MASK, f"the {mask_source} mask is empty after the crop")
    else:
        mask = grabcut_mask(image, box, s.seed, task.image_id, tries=s.tries)
        if mask is None:
            raise Rejected(GRABCUT_FAILED, f"foreground under 10% of the box in {s.tries} tries")
    return image, mask, Prepared(task.index, task.image_id, task.label, task.source, sb, box, round(kept, 4),
                                 mask_source, M.fg_fraction(mask), (oh, ow), task.extra)
