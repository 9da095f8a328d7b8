"""`bgbench build`: the IN-9 variants from images, boxes and (optionally) masks.

Two passes over a process pool, so the output depends on the seed and never on the number of
workers:
1. per image (workers): decode, check the annotation, resize/crop image, box and mask, apply the
   Appendix A filters, run GrabCut where no mask is given; the result is staged as .npy files;
2. in the parent: drop images that no donor of their size can serve, balance classes, and choose
   every mixed image's donor (an image of the same size) with one seeded generator over the sorted
   list of built images;
3. per image (workers): render the 9 variants with the registry's pure functions and write PNGs
   and the fg_mask.
Bad input is never fatal: each rejected image gets a row in rejects.csv with a reason.
"""
from __future__ import annotations

import csv
import shutil
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np
from PIL import Image
from .. import checks, console

from ..data.images import IMAGE_SUFFIXES, decode_image
from ..data.layout import MASK_DIR
from ..errors import BgbenchError, DataError
from .annotations import Annotation, find, load_annotations, rasterize_polygons
from .functions import Box, only_bg_t
from .grabcut import TRIES, grabcut_mask
from .preprocess import Preprocess
from .registry import get_variant, list_variants

MIN_BOX_KEPT = 0.5  # Appendix A: at least half of the box survives the crop
MAX_BOX_COVER = 0.9  # ... and it covers at most 90% of the crop
BOX_TOLERANCE = 1  # pixels a box may stick out of its image (annotation rounding)
PNG_COMPRESS = 1  # zlib level: fast, and still lossless

# rejects.csv reasons
UNSUPPORTED = "unsupported_file"
UNREADABLE = "unreadable_image"
MISSING_ANNOTATION = "missing_annotation"
BAD_ANNOTATION = "bad_annotation"
SEVERAL_BOXES = "several_boxes"
BOX_OUTSIDE = "box_outside_image"
IMAGE_TOO_SMALL = "image_too_small"
BOX_CROPPED = "box_cropped"
BOX_TOO_LARGE = "box_too_large"
BAD_MASK = "bad_mask"
EMPTY_MASK = "empty_mask"
GRABCUT_FAILED = "grabcut_failed"
BALANCED_OUT = "balanced_out"
NO_DONOR = "no_donor_of_same_size"

# manifest.csv: why a mixed image's background is not of the class its rule asks for
NO_CLASS_IMAGE = "no_image_of_class"
NO_CLASS_IMAGE_OF_SIZE = "no_image_of_class_and_size"


class BuildError(BgbenchError):
    """Nothing could be built, or the inputs are unusable as a whole."""


@dataclass(frozen=True)
class BuildConfig:
    images: Path
    boxes: Path
    out: Path
    masks: Optional[Path] = None
    split: str = "val"
    seed: int = 0
    workers: int = 1
    preprocess: Preprocess = Preprocess()
    balance: bool = True  # Appendix A filter 4
    tries: int = TRIES
    overwrite: bool = False

    def __post_init__(self):
        checks.at_least("--workers", self.workers, 1)
        checks.at_least("--grabcut-tries", self.tries, 1)
        checks.one_of("--split", self.split, ("val", "train"))
        pre = self.preprocess
        checks.at_least("--resize", pre.resize, 1)
        checks.at_least("--crop", pre.crop, 1)
        if pre.resize is not None and pre.crop is not None and pre.crop > pre.resize:
            raise BgbenchError(f"--crop {pre.crop} is larger than --resize {pre.resize}")


@dataclass(frozen=True)
class _Task:
    index: int
    image_id: str  # '<class>/<stem>'
    label: int
    path: Path
    annotation: Optional[Annotation]
    mask_path: Optional[Path]


@dataclass(frozen=True)
class _Settings:
    preprocess: Preprocess
    seed: int
    tries: int
    staging: Path
    out: Path
    split: str


@dataclass(frozen=True)
class Prepared:
    index: int
    image_id: str
    label: int
    source_box: Box
    box: Box
    box_kept: float
    mask_source: str  # grabcut | provided | coco
    fg_fraction: float
    size: Tuple[int, int]  # (height, width) after preprocessing: donors must match it


@dataclass(frozen=True)
class Donor:
    """The built image whose only_bg_t a mixed variant gets, and why it breaks the rule ('' if not)."""

    index: int
    fallback: str = ""


@dataclass(frozen=True)
class Reject:
    index: int
    file: str
    reason: str
    detail: str = ""


@dataclass
class BuildResult:
    out: Path
    built: List[Prepared]
    rejects: List[Reject]
    classes: Tuple[str, ...]
    reasons: Counter = field(default_factory=Counter)

    def outputs(self) -> dict:
        return {"built": len(self.built), "rejected": len(self.rejects), "reasons": dict(self.reasons),
                "classes": list(self.classes), "manifest": str(self.out / "manifest.csv")}

    def summary(self) -> str:
        lines = [f"built {len(self.built)} images x {len(list_variants())} variants + {MASK_DIR} in {self.out}"]
        if self.rejects:
            by = ", ".join(f"{r}: {n}" for r, n in sorted(self.reasons.items()))
            lines.append(f"rejected {len(self.rejects)} ({by}); see {self.out / 'rejects.csv'}")
        else:
            lines.append("rejected 0")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# pass 1: one image -> staged (image, mask) or a reject

def _source_mask(task: _Task, h: int, w: int) -> Tuple[Optional[np.ndarray], str]:
    """A provided or COCO mask at the source resolution, and its source name."""
    if task.mask_path is not None:
        p = task.mask_path
        try:
            m = np.load(p) if p.suffix == ".npy" else np.asarray(Image.open(p).convert("L"))
        except (OSError, ValueError) as e:
            raise _RejectError(BAD_MASK, f"cannot read mask {p.name}: {e}") from None
        if m.ndim == 3:
            m = m[..., 0]
        if m.shape != (h, w):
            raise _RejectError(BAD_MASK, f"mask {p.name} has shape {m.shape}, image is {h}x{w}")
        return m != 0, "provided"
    if task.annotation is not None and task.annotation.polygons:
        return rasterize_polygons(task.annotation.polygons, h, w), "coco"
    return None, "grabcut"


class _RejectError(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def _prepare(task: _Task, s: _Settings) -> Union[Prepared, Reject]:
    try:
        return _prepare_or_raise(task, s)
    except _RejectError as e:
        return Reject(task.index, task.image_id + task.path.suffix, e.reason, e.detail)


def _prepare_or_raise(task: _Task, s: _Settings) -> Prepared:
    if task.path.suffix.lower() not in IMAGE_SUFFIXES:
        raise _RejectError(UNSUPPORTED, f"suffix {task.path.suffix or '(none)'} is not an image type")
    ann = task.annotation
    if ann is not None and ann.error:
        raise _RejectError(BAD_ANNOTATION, ann.error)
    if ann is None or not ann.boxes:
        raise _RejectError(MISSING_ANNOTATION, "no annotation" if ann is None else "annotation has no box")
    if len(ann.boxes) > 1:
        raise _RejectError(SEVERAL_BOXES, f"{len(ann.boxes)} boxes")
    try:
        image = decode_image(task.path)
    except DataError as e:
        raise _RejectError(UNREADABLE, str(e).split(": ", 1)[-1]) from None
    h, w = image.shape[:2]
    sb = ann.boxes[0]
    t = BOX_TOLERANCE
    if sb[0] < -t or sb[1] < -t or sb[2] > w + t or sb[3] > h + t or sb[2] <= sb[0] or sb[3] <= sb[1]:
        raise _RejectError(BOX_OUTSIDE, f"box {sb} in a {w}x{h} image")
    sb = (max(0, sb[0]), max(0, sb[1]), min(w, sb[2]), min(h, sb[3]))
    if sb[2] <= sb[0] or sb[3] <= sb[1]:
        raise _RejectError(BOX_OUTSIDE, f"box {ann.boxes[0]} in a {w}x{h} image")
    src_mask, mask_source = _source_mask(task, h, w)
    pre = s.preprocess
    try:
        _, _, _, _, oh, ow = pre.output_size(h, w)
    except ValueError as e:
        raise _RejectError(IMAGE_TOO_SMALL, str(e)) from None
    box, kept = pre.box(sb, h, w)
    if box is None or kept < MIN_BOX_KEPT:
        raise _RejectError(BOX_CROPPED, f"{kept:.0%} of the box remains after the crop")
    cover = (box[2] - box[0]) * (box[3] - box[1]) / (oh * ow)
    if cover > MAX_BOX_COVER:  # so only_bg_t always has a strip: only a box covering everything leaves none
        raise _RejectError(BOX_TOO_LARGE, f"the box covers {cover:.0%} of the image")
    image = pre.image(image)
    if src_mask is not None:
        mask = pre.mask(src_mask)
        if not mask.any():
            raise _RejectError(EMPTY_MASK, f"the {mask_source} mask is empty after the crop")
    else:
        mask = grabcut_mask(image, box, s.seed, task.image_id, tries=s.tries)
        if mask is None:
            raise _RejectError(GRABCUT_FAILED, f"foreground under 10% of the box in {s.tries} tries")
    np.save(s.staging / f"{task.index:07d}_image.npy", image)
    np.save(s.staging / f"{task.index:07d}_mask.npy", mask)
    return Prepared(task.index, task.image_id, task.label, sb, box, round(kept, 4), mask_source,
                    round(float(mask.mean()), 4), (oh, ow))


# ----------------------------------------------------------------------------------------------
# pass 3: render and write one image's variants

@dataclass(frozen=True)
class _Job:
    item: Prepared
    donors: Dict[str, Tuple[int, Box]]  # mixed variant -> (donor index, donor box)


def _render(job: _Job, s: _Settings) -> None:
    it = job.item
    image = np.load(s.staging / f"{it.index:07d}_image.npy")
    mask = np.load(s.staging / f"{it.index:07d}_mask.npy")
    backgrounds: Dict[int, np.ndarray] = {}
    for name in list_variants():
        variant = get_variant(name)
        if variant.donor is None:
            out = variant.render(image, mask, it.box)
        else:
            d, dbox = job.donors[name]
            if d not in backgrounds:
                dimg = image if d == it.index else np.load(s.staging / f"{d:07d}_image.npy")
                backgrounds[d] = only_bg_t(dimg, mask, dbox)  # depends on the box only
            out = variant.render(image, mask, it.box, backgrounds[d])
        path = s.out / name / s.split / f"{it.image_id}.png"
        Image.fromarray(out).save(path, compress_level=PNG_COMPRESS)
    np.save(s.out / MASK_DIR / s.split / f"{it.image_id}.npy", mask.astype(np.uint8))


# ----------------------------------------------------------------------------------------------
# the parent

def _init_worker() -> None:
    cv2.setNumThreads(1)


def _map(fn: Callable, items: Sequence, s: _Settings, pool: Optional[ProcessPoolExecutor], workers: int,
         desc: str, progress: bool) -> list:
    """fn(item, s) for every item, in order; on `pool` when there is one."""
    bar = console.progress(enabled=progress, total=len(items), desc=desc, unit="img")
    out = []
    try:
        if pool is None:
            for it in items:
                out.append(fn(it, s))
                bar.update()
        else:
            chunk = max(1, min(16, len(items) // (workers * 8)))
            for r in pool.map(fn, items, [s] * len(items), chunksize=chunk):
                out.append(r)
                bar.update()
        return out
    finally:
        bar.close()


@contextmanager
def _executor(workers: int, n: int) -> Iterator[Optional[ProcessPoolExecutor]]:
    """One process pool for both passes; none (in-process) for one worker or one image.

    In-process runs use single-threaded OpenCV too, as the workers do, so that worker counts
    compare like with like; the caller's setting is restored afterwards.
    """
    if workers <= 1 or n <= 1:
        threads = cv2.getNumThreads()
        cv2.setNumThreads(1)
        try:
            yield None
        finally:
            cv2.setNumThreads(threads)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker) as pool:
        yield pool


def _find_mask(masks: Optional[Path], cls: str, stem: str) -> Optional[Path]:
    if masks is None:
        return None
    for suffix in (".npy", ".png"):
        p = masks / cls / f"{stem}{suffix}"
        if p.is_file():
            return p
    return None


def _tasks(cfg: BuildConfig, classes: Sequence[str]) -> List[_Task]:
    annotations = load_annotations(cfg.boxes)
    tasks = []
    for label, cls in enumerate(classes):
        for p in sorted((cfg.images / cls).iterdir()):
            if not p.is_file() or p.name.startswith("."):
                continue
            tasks.append(_Task(len(tasks), f"{cls}/{p.stem}", label, p, find(annotations, cls, p.stem),
                               _find_mask(cfg.masks, cls, p.stem)))
    return tasks


def _balance(built: List[Prepared], num_classes: int, seed: int) -> Tuple[List[Prepared], List[Prepared]]:
    """Drop images at random (seeded) down to the smallest non-empty class count."""
    by_class: Dict[int, List[Prepared]] = {}
    for p in built:
        by_class.setdefault(p.label, []).append(p)
    if not by_class:
        return built, []
    k = min(len(v) for v in by_class.values())
    rng = np.random.default_rng([seed, 7])
    keep = set()
    for label in sorted(by_class):
        members = by_class[label]
        keep.update(members[i].index for i in rng.choice(len(members), size=k, replace=False))
    return [p for p in built if p.index in keep], [p for p in built if p.index not in keep]


def assign_donors(built: Sequence[Prepared], num_classes: int, seed: int) -> Dict[int, Dict[str, Donor]]:
    """For each built image and mixed variant, the donor whose only_bg_t it gets.

    A donor has the image's size, since a composite needs one. It is a random image of the
    donor class other than the image itself where one exists; when the donor class has no built
    image of that size, any other built image of that size (its Donor says why). An image that no
    donor can serve (the only one of its size, with a rule asking for another class) gets no
    entry. One generator, one pass in sorted order: deterministic.
    """
    rng = np.random.default_rng([seed, 99])
    by_class: Dict[Tuple[int, Tuple[int, int]], List[int]] = {}
    by_size: Dict[Tuple[int, int], List[int]] = {}
    for p in built:
        by_class.setdefault((p.label, p.size), []).append(p.index)
        by_size.setdefault(p.size, []).append(p.index)
    labels = {p.label for p in built}
    mixed = [n for n in list_variants() if get_variant(n).donor is not None]
    out: Dict[int, Dict[str, Donor]] = {}
    for p in built:
        chosen: Dict[str, Donor] = {}
        for name in mixed:
            dc = get_variant(name).donor_class(p.label, num_classes, rng)
            members = by_class.get((dc, p.size), [])
            pool, fallback = [j for j in members if j != p.index] or members, ""
            if not pool:
                pool = [j for j in by_size[p.size] if j != p.index]
                fallback = NO_CLASS_IMAGE_OF_SIZE if dc in labels else NO_CLASS_IMAGE
            if pool:
                chosen[name] = Donor(pool[int(rng.integers(len(pool)))], fallback)
        if len(chosen) == len(mixed):
            out[p.index] = chosen
    return out


def _select(built: List[Prepared], num_classes: int, cfg: BuildConfig
            ) -> Tuple[List[Prepared], Dict[int, Dict[str, Donor]], List[Tuple[Prepared, str, str]]]:
    """Drop images that no donor can serve, balance classes (if asked), and repeat until both hold.

    Dropping an image without a donor can unbalance the classes, and balancing can leave an image
    alone in its size; each round that changes nothing ends it, and every other round drops images.
    Returns the kept images, their donors, and (image, reason, detail) for each dropped one.
    """
    dropped: List[Tuple[Prepared, str, str]] = []
    while True:
        donors = assign_donors(built, num_classes, cfg.seed)
        stranded = [p for p in built if p.index not in donors]
        kept = [p for p in built if p.index in donors]
        kept, out = _balance(kept, num_classes, cfg.seed) if cfg.balance else (kept, [])
        if not stranded and not out:
            return built, donors, dropped
        dropped += [(p, NO_DONOR, f"no other built image is {p.size[1]}x{p.size[0]}") for p in stranded]
        dropped += [(p, BALANCED_OUT, "dropped to balance classes") for p in out]
        built = kept


def _merge_csv(path: Path, fields: List[str], rows: List[dict], split: str) -> None:
    """Write `rows`, keeping rows of other splits already in the file."""
    kept = []
    if path.is_file():
        with open(path, newline="") as f:
            kept = [r for r in csv.DictReader(f) if r.get("split") != split]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(kept + rows)


def _fmt_box(b: Box) -> str:
    return " ".join(str(v) for v in b)


def build(cfg: BuildConfig, progress: bool = True) -> BuildResult:
    """Build every variant of `cfg.images` into `cfg.out`; see the module docstring."""
    images, out = Path(cfg.images).expanduser(), Path(cfg.out).expanduser()
    cfg = BuildConfig(**{**cfg.__dict__, "images": images, "out": out,
                         "boxes": Path(cfg.boxes).expanduser(),
                         "masks": Path(cfg.masks).expanduser() if cfg.masks else None})
    if not images.is_dir():
        raise BuildError(f"--images {images} is not a folder")
    if cfg.masks is not None and not cfg.masks.is_dir():
        raise BuildError(f"--masks {cfg.masks} is not a folder")
    if not cfg.boxes.exists():
        raise BuildError(f"--boxes {cfg.boxes} does not exist")
    classes = tuple(sorted(p.name for p in images.iterdir() if p.is_dir() and not p.name.startswith(".")))
    if not classes:
        raise BuildError(f"--images {images} has no class folders (expected DIR/<class>/<image>)")
    variants = list_variants()
    existing = out / "original" / cfg.split
    if existing.is_dir() and any(existing.iterdir()):
        if not cfg.overwrite:
            raise BuildError(f"{existing} already holds images; pass --overwrite to replace the {cfg.split} split")
        for name in [*variants, MASK_DIR]:
            shutil.rmtree(out / name / cfg.split, ignore_errors=True)
    tasks = _tasks(cfg, classes)
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".bgbench-staging-{cfg.split}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    s = _Settings(cfg.preprocess, cfg.seed, cfg.tries, staging, out, cfg.split)
    try:
        with _executor(cfg.workers, len(tasks)) as pool:
            results = _map(_prepare, tasks, s, pool, cfg.workers, "prepare", progress)
            built = [r for r in results if isinstance(r, Prepared)]
            rejects = [r for r in results if isinstance(r, Reject)]
            built, donors, dropped = _select(built, len(classes), cfg)
            rejects += [Reject(p.index, p.image_id + tasks[p.index].path.suffix, reason, detail)
                        for p, reason, detail in dropped]
            rejects.sort(key=lambda r: r.index)
            boxes = {p.index: p.box for p in built}
            if built:
                for name in [*variants, MASK_DIR]:
                    for cls in classes:
                        (out / name / cfg.split / cls).mkdir(parents=True, exist_ok=True)
                jobs = [_Job(p, {v: (d.index, boxes[d.index]) for v, d in donors[p.index].items()}) for p in built]
                _map(_render, jobs, s, pool, cfg.workers, "render", progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    result = BuildResult(out, built, rejects, classes, Counter(r.reason for r in rejects))
    _write_tables(cfg, tasks, result, donors)
    if not built:
        raise BuildError(f"nothing could be built from {images}: {len(rejects)} rejected "
                         f"({', '.join(f'{r}: {n}' for r, n in sorted(result.reasons.items())) or 'no files'}); "
                         f"see {out / 'rejects.csv'}")
    return result


def _write_tables(cfg: BuildConfig, tasks: Sequence[_Task], result: BuildResult,
                  donors: Dict[int, Dict[str, Donor]]) -> None:
    mixed = [n for n in list_variants() if get_variant(n).donor is not None]
    by_index = {p.index: p for p in result.built}
    fields = ["split", "image", "label", "class", "source", "source_box", "box", "box_kept", "mask_source",
              "fg_fraction"] + [f"{v}_{k}" for v in mixed for k in ("bg_image", "bg_class", "bg_fallback")]
    rows = []
    for p in result.built:
        row = {"split": cfg.split, "image": p.image_id, "label": p.label, "class": result.classes[p.label],
               "source": tasks[p.index].path.relative_to(cfg.images).as_posix(),
               "source_box": _fmt_box(p.source_box), "box": _fmt_box(p.box), "box_kept": p.box_kept,
               "mask_source": p.mask_source, "fg_fraction": p.fg_fraction}
        for v in mixed:
            donor = donors[p.index][v]
            d = by_index[donor.index]
            row[f"{v}_bg_image"], row[f"{v}_bg_class"] = d.image_id, result.classes[d.label]
            row[f"{v}_bg_fallback"] = donor.fallback
        rows.append(row)
    _merge_csv(cfg.out / "manifest.csv", fields, rows, cfg.split)
    _merge_csv(cfg.out / "rejects.csv", ["split", "file", "reason", "detail"],
               [{"split": cfg.split, "file": r.file, "reason": r.reason, "detail": r.detail} for r in result.rejects],
               cfg.split)
