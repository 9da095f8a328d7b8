"""`bgbench edit`: ImageNet-E attribute edits of a masked IN-9-layout dataset.

Per image (worker processes, single-threaded OpenCV and torch): decode, check the mask, make the
clean background once, render every edit level with a generator seeded by (seed, image id,
level), measure the pixel rate and the background's GLCM statistics, and write PNGs. The
adversarial complexity level needs the classifier, so it runs batched in the parent afterwards.
The output depends on the seed, never on the number of workers. A bad mask or a failed edit is
a row in rejects.csv, never an abort.
"""
from __future__ import annotations

import csv
import json
import shutil
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

from .. import checks, console
from ..data.images import decode_image
from ..data.layout import MASK_DIR, discover
from ..errors import BgbenchError, DataError
from . import complexity as C
from .backends import get_complexity_editor, get_inpainter
from .functions import DoesNotFit, pixel_rate
from .glcm import glcm_stats
from .registry import ADVERSARIAL, ATTRIBUTES, POSITION_RATE, SIZE_RATES, Context, Edit, edits_for

ORIGINAL = "original"
PNG_COMPRESS = 1
RATE_TOLERANCE = 0.10  # a size/position edit must reach its pixel rate within 10%
MANIFEST_FIELDS = ["level", "attribute", "image", "label", "class", "source", "pixel_rate", "glcm_contrast",
                   "glcm_dissimilarity", "params"]

# rejects.csv reasons
UNREADABLE = "unreadable_image"
MISSING_MASK = "missing_mask"
BAD_MASK = "bad_mask"
EMPTY_MASK = "empty_mask"
NO_BACKGROUND = "no_background"
RATE_UNREACHABLE = "rate_unreachable"
DOES_NOT_FIT = "does_not_fit"  # a rotated object larger than the image (never shrunk to fit)
EDIT_FAILED = "edit_failed"


@dataclass(frozen=True)
class EditConfig:
    data: Path
    out: Path
    attributes: Tuple[str, ...] = ATTRIBUTES
    levels: Optional[Tuple[str, ...]] = None
    angles: Optional[Tuple[float, ...]] = None
    split: str = "val"
    seed: int = 0
    workers: int = 1
    inpainter: str = "telea"
    complexity_editor: str = "fft"
    adv_eps: float = C.ADV_EPS
    adv_steps: int = C.ADV_STEPS
    batch_size: int = 32
    overwrite: bool = False

    def __post_init__(self):
        checks.at_least("--workers", self.workers, 1)
        checks.at_least("--adv-steps", self.adv_steps, 1)
        checks.within("--adv-eps", self.adv_eps, 0, 1, open_low=True)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.one_of("--split", self.split, ("val", "train"))
        for a in self.attributes:
            checks.one_of("--attributes", a, ATTRIBUTES)
        get_inpainter(self.inpainter)
        get_complexity_editor(self.complexity_editor)


@dataclass(frozen=True)
class _Task:
    index: int
    image_id: str
    label: int
    path: Path
    mask_path: Path


@dataclass(frozen=True)
class _Settings:
    cfg: EditConfig


@dataclass(frozen=True)
class Row:
    index: int
    level: str
    attribute: str
    image: str
    label: int
    source: str
    pixel_rate: float
    glcm_contrast: float
    glcm_dissimilarity: float
    params: str


@dataclass(frozen=True)
class Reject:
    index: int
    image: str
    level: str  # '' when the whole image is rejected
    reason: str
    detail: str = ""


@dataclass
class EditResult:
    out: Path
    levels: List[str]
    rows: List[Row]
    rejects: List[Reject]
    skipped: List[str] = field(default_factory=list)  # levels not run, with why
    run_id: Optional[int] = None

    def by_level(self) -> Dict[str, List[Row]]:
        d: Dict[str, List[Row]] = defaultdict(list)
        for r in self.rows:
            d[r.level].append(r)
        return d

    def level_means(self) -> List[dict]:
        """Per level: images, mean pixel rate and mean GLCM contrast / dissimilarity of the background."""
        out = []
        groups = self.by_level()
        for level in [ORIGINAL, *self.levels]:
            rows = groups.get(level, [])
            def mean(key):
                v = np.array([getattr(r, key) for r in rows], dtype=np.float64)
                v = v[np.isfinite(v)]
                return round(float(v.mean()), 4) if v.size else None
            out.append({"level": level, "images": len(rows), "pixel_rate": mean("pixel_rate"),
                        "glcm_contrast": mean("glcm_contrast"), "glcm_dissimilarity": mean("glcm_dissimilarity")})
        return out

    def outputs(self) -> dict:
        return {"out": str(self.out), "images": len(self.by_level().get(ORIGINAL, [])),
                "edited": sum(1 for r in self.rows if r.level != ORIGINAL), "rejected": len(self.rejects),
                "reasons": dict(Counter(r.reason for r in self.rejects)), "levels": self.level_means(),
                "skipped": self.skipped, "manifest": str(self.out / "manifest.csv")}

    def metric_rows(self) -> list:
        rows = []
        for m in self.level_means():
            for key in ("glcm_contrast", "glcm_dissimilarity", "pixel_rate"):
                if m[key] is not None:
                    rows.append((key, m["level"], m[key], None, None, m["images"]))
        return rows

    def table(self) -> str:
        lines = [f"{'level':<18}{'images':>7}{'pixel rate':>12}{'GLCM contrast':>15}{'dissimilarity':>15}"]
        for m in self.level_means():
            f = lambda v: "-" if v is None else f"{v:.4f}"
            lines.append(f"{m['level']:<18}{m['images']:>7}{f(m['pixel_rate']):>12}{f(m['glcm_contrast']):>15}"
                         f"{f(m['glcm_dissimilarity']):>15}")
        if self.rejects:
            by = ", ".join(f"{k}: {n}" for k, n in sorted(Counter(r.reason for r in self.rejects).items()))
            lines.append(f"rejected {len(self.rejects)} ({by}); see {self.out / 'rejects.csv'}")
        return "\n".join(lines)


class _RejectError(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def level_rng(seed: int, image_id: str, level: str) -> np.random.Generator:
    """The generator of one image's edit: from the seed, the image id and the level only."""
    return np.random.default_rng([seed, zlib.crc32(image_id.encode()), zlib.crc32(level.encode())])


def load_checked_mask(path: Path, shape: Tuple[int, int]) -> np.ndarray:
    """A foreground mask that can be edited: readable, the image's size, neither empty nor full."""
    try:
        m = np.load(path) if path.suffix == ".npy" else np.asarray(Image.open(path).convert("L"))
    except (OSError, ValueError, EOFError) as e:
        raise _RejectError(BAD_MASK, f"cannot read {path.name}: {e}") from None
    if m.ndim == 3:
        m = m[..., 0]
    if m.shape != shape:
        raise _RejectError(BAD_MASK, f"mask {path.name} is {m.shape}, image is {shape}")
    m = m != 0
    if not m.any():
        raise _RejectError(EMPTY_MASK, f"mask {path.name} is empty")
    if m.all():
        raise _RejectError(NO_BACKGROUND, f"mask {path.name} covers the whole image")
    return m


def _save(image: np.ndarray, s: _Settings, level: str, image_id: str) -> None:
    Image.fromarray(image).save(s.cfg.out / level / s.cfg.split / f"{image_id}.png", compress_level=PNG_COMPRESS)


def _row(task: _Task, s: _Settings, level: str, attribute: str, image: np.ndarray, mask: np.ndarray,
         params: dict) -> Row:
    contrast, dissim = glcm_stats(image, mask)
    return Row(task.index, level, attribute, task.image_id, task.label,
               task.path.relative_to(s.cfg.data).as_posix(), round(pixel_rate(mask), 5),
               round(contrast, 5), round(dissim, 5), json.dumps(params, sort_keys=True))


def _check_rate(edit: Edit, mask: np.ndarray) -> None:
    target = SIZE_RATES.get(edit.level) if edit.attribute == "size" else (
        POSITION_RATE if edit.attribute == "position" else None)
    if target is not None:
        reached = pixel_rate(mask)
        if abs(reached - target) > RATE_TOLERANCE * target:
            raise _RejectError(RATE_UNREACHABLE, f"pixel rate {reached:.4f} for a target of {target}")


def _edit_one(task: _Task, s: _Settings) -> Tuple[List[Row], List[Reject]]:
    cfg = s.cfg
    try:
        try:
            image = decode_image(task.path)
        except DataError as e:
            raise _RejectError(UNREADABLE, str(e).split(": ", 1)[-1]) from None
        if not task.mask_path.is_file():
            raise _RejectError(MISSING_MASK, f"no {task.mask_path}")
        mask = load_checked_mask(task.mask_path, image.shape[:2])
    except _RejectError as e:
        return [], [Reject(task.index, task.image_id, "", e.reason, e.detail)]
    _save(image, s, ORIGINAL, task.image_id)
    np.save(cfg.out / MASK_DIR / cfg.split / f"{task.image_id}.npy", mask.astype(np.uint8))
    rows = [_row(task, s, ORIGINAL, ORIGINAL, image, mask, {})]
    rejects: List[Reject] = []
    inpainter = get_inpainter(cfg.inpainter)
    cache: Dict[str, np.ndarray] = {}

    def background() -> np.ndarray:
        if "bg" not in cache:
            cache["bg"] = inpainter(image, mask)
        return cache["bg"]

    for edit in edits_for(cfg.attributes, cfg.angles, cfg.levels, with_model=False):
        ctx = Context(background, get_complexity_editor(cfg.complexity_editor),
                      level_rng(cfg.seed, task.image_id, edit.name))
        try:
            try:
                done = edit.render(image, mask, ctx)
            except DoesNotFit as e:
                raise _RejectError(DOES_NOT_FIT, str(e)) from None
            except Exception as e:  # a failed edit rejects this image at this level only
                raise _RejectError(EDIT_FAILED, f"{type(e).__name__}: {e}".splitlines()[0]) from None
            _check_rate(edit, done.mask)
        except _RejectError as e:
            rejects.append(Reject(task.index, task.image_id, edit.name, e.reason, e.detail))
            continue
        _save(done.image, s, edit.name, task.image_id)
        rows.append(_row(task, s, edit.name, edit.attribute, done.image, done.mask, done.params))
    return rows, rejects


def _init_worker() -> None:
    import cv2
    import torch
    cv2.setNumThreads(1)
    torch.set_num_threads(1)


def _tasks(layout) -> List[_Task]:
    return [_Task(i, it.image_id, it.label, it.path, layout.mask_path(it.image_id))
            for i, it in enumerate(layout.items(ORIGINAL))]


def _adversarial(model, tasks: Sequence[_Task], ok: Sequence[int], s: _Settings, progress: bool) -> List[Row]:
    """The adversarial complexity level, batched over same-size images in the parent."""
    cfg = s.cfg
    by_index = {t.index: t for t in tasks}
    items = []
    for i in ok:
        t = by_index[i]
        img = decode_image(cfg.out / ORIGINAL / cfg.split / f"{t.image_id}.png")
        mask = np.load(cfg.out / MASK_DIR / cfg.split / f"{t.image_id}.npy").astype(bool)
        items.append((t, img, mask))
    rows = []
    bar = console.progress(enabled=progress, total=len(items), desc=ADVERSARIAL, unit="img")
    start = 0
    while start < len(items):
        end = start + 1
        while end < len(items) and end - start < cfg.batch_size and items[end][1].shape == items[start][1].shape:
            end += 1
        chunk = items[start:end]
        outs = C.adversarial_backgrounds(model, [c[1] for c in chunk], [c[2] for c in chunk],
                                         [c[0].label for c in chunk], eps=cfg.adv_eps, steps=cfg.adv_steps)
        for (t, _, mask), out in zip(chunk, outs):
            _save(out, s, ADVERSARIAL, t.image_id)
            rows.append(_row(t, s, ADVERSARIAL, "complexity", out, mask,
                             {"eps": round(cfg.adv_eps, 6), "steps": cfg.adv_steps, "model": model.spec.name}))
        bar.update(len(chunk))
        start = end
    bar.close()
    return rows


def edit_dataset(cfg: EditConfig, model=None, progress: bool = True) -> EditResult:
    """Write every requested edit level of `cfg.data` into `cfg.out`; see the module docstring."""
    import cv2
    import torch
    data, out = Path(cfg.data).expanduser(), Path(cfg.out).expanduser()
    cfg = EditConfig(**{**cfg.__dict__, "data": data, "out": out})
    if out.resolve() == data.resolve():
        raise BgbenchError(f"--out {out} is the source dataset; write the edits elsewhere")
    layout = discover(data, split=cfg.split, variants=[ORIGINAL])
    if not layout.has_masks:
        raise DataError(f"no {MASK_DIR}/{cfg.split}/ folder under {data}; edits need foreground masks")
    if model is not None:
        from ..models.spec import check_compatible
        check_compatible(model, layout.classes)
    edits = edits_for(cfg.attributes, cfg.angles, cfg.levels, with_model=model is not None)
    skipped = []
    if model is None and "complexity" in cfg.attributes and (
            not cfg.levels or ADVERSARIAL in [e.name for e in edits_for(["complexity"], levels=cfg.levels,
                                                                        with_model=True)]):
        skipped.append(f"{ADVERSARIAL}: needs --model")
    if not edits:
        raise BgbenchError(f"--levels {' '.join(cfg.levels or ())} selects no edit level")
    existing = out / ORIGINAL / cfg.split
    if existing.is_dir() and any(existing.iterdir()):
        if not cfg.overwrite:
            raise BgbenchError(f"{existing} already holds images; pass --overwrite to replace the {cfg.split} split")
    for name in [ORIGINAL, MASK_DIR, *[e.name for e in edits]]:
        shutil.rmtree(out / name / cfg.split, ignore_errors=True)
        for cls in layout.classes:
            (out / name / cfg.split / cls).mkdir(parents=True, exist_ok=True)
    s = _Settings(cfg)
    tasks = _tasks(layout)
    results: List[Tuple[List[Row], List[Reject]]] = []
    bar = console.progress(enabled=progress, total=len(tasks), desc="edit", unit="img")
    threads = (cv2.getNumThreads(), torch.get_num_threads())
    try:
        if cfg.workers <= 1 or len(tasks) <= 1:
            _init_worker()
            for t in tasks:
                results.append(_edit_one(t, s))
                bar.update()
        else:
            chunk = max(1, min(8, len(tasks) // (cfg.workers * 8)))
            with ProcessPoolExecutor(max_workers=cfg.workers, initializer=_init_worker) as pool:
                for r in pool.map(_edit_one, tasks, [s] * len(tasks), chunksize=chunk):
                    results.append(r)
                    bar.update()
    finally:
        bar.close()
        cv2.setNumThreads(threads[0])
        torch.set_num_threads(threads[1])
    rows = [r for rs, _ in results for r in rs]
    rejects = [j for _, js in results for j in js]
    if model is not None and any(e.needs_model for e in edits):
        ok = sorted({r.index for r in rows if r.level == ORIGINAL})
        model = model.eval()
        rows += _adversarial(model, tasks, ok, s, progress)
    order = {name: k for k, name in enumerate([ORIGINAL, *[e.name for e in edits]])}
    rows.sort(key=lambda r: (order[r.level], r.index))
    rejects.sort(key=lambda j: (j.index, order.get(j.level, -1)))
    result = EditResult(out, [e.name for e in edits], rows, rejects, skipped)
    _write_tables(cfg, layout.classes, result)
    if not any(r.level == ORIGINAL for r in rows):
        raise BgbenchError(f"no image of {data} could be edited: {len(rejects)} rejected; see {out / 'rejects.csv'}")
    return result


def _write_tables(cfg: EditConfig, classes: Sequence[str], result: EditResult) -> None:
    with open(cfg.out / "manifest.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["split", *MANIFEST_FIELDS])
        w.writeheader()
        for r in result.rows:
            w.writerow({"split": cfg.split, "level": r.level, "attribute": r.attribute, "image": r.image,
                        "label": r.label, "class": classes[r.label], "source": r.source,
                        "pixel_rate": r.pixel_rate, "glcm_contrast": r.glcm_contrast,
                        "glcm_dissimilarity": r.glcm_dissimilarity, "params": r.params})
    with open(cfg.out / "rejects.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["split", "image", "level", "reason", "detail"])
        w.writeheader()
        for j in result.rejects:
            w.writerow({"split": cfg.split, "image": j.image, "level": j.level, "reason": j.reason,
                        "detail": j.detail})


def config_dict(cfg: EditConfig) -> dict:
    d = asdict(cfg)
    d["data"], d["out"] = str(cfg.data), str(cfg.out)
    return d
