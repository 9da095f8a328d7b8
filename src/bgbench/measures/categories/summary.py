"""The paper's prediction categories (Table 3), from a per-image table or a stored eval run; no model is loaded.

Each image is judged on ORIGINAL (the full image), MIXED-RAND (a proxy for the foreground
alone) and ONLY-BG-T (a proxy for the background alone); see DESIGN.md §2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from ...classes import NO_CLASS
from ...errors import BgbenchError
from ...store import Store
from ...probing.tables import RunTable, stored_table
from ...result import Result

CATEGORIES = ("BG Irrelevant", "BG Required", "BG+FG Required", "BG Fools", "Other")
NEEDED = ("original", "mixed_rand", "only_bg_t")


def same_class(a: np.ndarray, b: np.ndarray, raw_a: Optional[np.ndarray] = None,
               raw_b: Optional[np.ndarray] = None) -> np.ndarray:
    """Whether two predictions name the same class.

    Two IN-9 predictions are the same when they are equal, except -1 (NO_CLASS): a 1000-class
    model's argmax that maps to no IN-9 class. Two of those are the same class only when their
    raw ImageNet classes are equal; without the raw classes that cannot be told, so they count
    as different (a "BG Fools" is never claimed on a guess).
    """
    a, b = np.asarray(a), np.asarray(b)
    same = (a == b) & (a != NO_CLASS)
    if raw_a is not None and raw_b is not None:
        same |= (a == NO_CLASS) & (b == NO_CLASS) & (np.asarray(raw_a) == np.asarray(raw_b))
    return same


def categorize(label: np.ndarray, full: np.ndarray, fg: np.ndarray, bg: np.ndarray,
               full_raw: Optional[np.ndarray] = None, bg_raw: Optional[np.ndarray] = None) -> np.ndarray:
    """Category index (into CATEGORIES) of each image from its three predictions.

    full/fg/bg: predictions on ORIGINAL, MIXED-RAND and ONLY-BG-T (-1: no IN-9 class, always
    wrong). full_raw/bg_raw: the raw top-1 ImageNet classes of a 1000-class model, used only to
    decide whether two -1 predictions are the same wrong class (BG Fools).
    """
    label, full, fg, bg = (np.asarray(a) for a in (label, full, fg, bg))
    full_ok, fg_ok, bg_ok = full == label, fg == label, bg == label
    out = np.full(label.shape, CATEGORIES.index("Other"), dtype=np.int64)
    out[full_ok & ~fg_ok & bg_ok] = CATEGORIES.index("BG Required")
    out[full_ok & ~fg_ok & ~bg_ok] = CATEGORIES.index("BG+FG Required")
    out[~full_ok & fg_ok & same_class(bg, full, bg_raw, full_raw)] = CATEGORIES.index("BG Fools")
    out[full_ok == fg_ok] = CATEGORIES.index("BG Irrelevant")
    return out


def shares(cats: np.ndarray) -> Dict[str, float]:
    n = max(len(cats), 1)
    counts = np.bincount(cats, minlength=len(CATEGORIES))
    return {c: float(counts[i]) / n for i, c in enumerate(CATEGORIES)}


@dataclass
class CategoryResult(Result):
    """Shares of each category, overall and per class (each sums to 1)."""

    run_id: Optional[int]  # None for a table that was never stored
    overall: Dict[str, float]
    per_class: Dict[str, Dict[str, float]]
    n: int
    counts: Dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "overall": self.overall, "per_class": self.per_class, "n": self.n}

    def table(self) -> list:
        """One row per class, then 'overall': each category's share."""
        return [{"class": name, **s} for name, s in [*self.per_class.items(), ("overall", self.overall)]]

    def text(self) -> str:
        short = {"BG Irrelevant": "irrel", "BG Required": "bg-req", "BG+FG Required": "bg+fg",
                 "BG Fools": "fools", "Other": "other"}
        head = f"{'class':<24}" + "".join(f"{short[c]:>8}" for c in CATEGORIES)
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        lines = [f"prediction categories of {of} (paper Table 3; % of {self.n} images)", head,
                 *(f"{name:<24}" + "".join(f"{100 * s[c]:7.1f}%" for c in CATEGORIES)
                   for name, s in [*self.per_class.items(), ("overall", self.overall)])]
        return "\n".join(lines)


def prediction_categories(store: Store, run_id: int, mapping: Optional[str] = None) -> CategoryResult:
    """Table 3 of a stored eval run, overall and per class (images in all three variants)."""
    return categories_of(stored_table(store, run_id, mapping=mapping, variants=NEEDED))


def categories_of(table: RunTable) -> CategoryResult:
    """Table 3 of a per-image table, overall and per class (images in all three variants)."""
    judged = judge_images(table)
    ids, label, cats = judged.image_ids, judged.labels, judged.categories
    classes = table.classes
    per_class = {classes[c] if c < len(classes) else str(int(c)): shares(cats[label == c]) for c in np.unique(label)}
    counts = dict(zip(CATEGORIES, np.bincount(cats, minlength=len(CATEGORIES)).tolist()))
    return CategoryResult(run_id=table.run_id, overall=shares(cats), per_class=per_class, n=len(ids), counts=counts)


@dataclass
class JudgedImages:
    """Each image's category and the three predictions behind it (aligned arrays, by image id).

    preds, conf: variant (ORIGINAL, MIXED-RAND, ONLY-BG-T) -> prediction and its confidence.
    """

    image_ids: list
    labels: np.ndarray
    categories: np.ndarray  # indices into CATEGORIES
    preds: Dict[str, np.ndarray]
    conf: Dict[str, np.ndarray]


def judge_images(table: RunTable) -> JudgedImages:
    """The category of every image that is in all three variants, with its predictions."""
    table.require(NEEDED, f"prediction categories need {', '.join(NEEDED)} "
                          f"(bgbench eval --variants {' '.join(NEEDED)})")
    p = table.variants
    ids = sorted(set(p["original"].image_ids) & set(p["mixed_rand"].image_ids) & set(p["only_bg_t"].image_ids))
    if not ids:
        raise BgbenchError(f"{table.name}: no image is in all of {', '.join(NEEDED)}")
    pick = {v: _take(p[v], ids) for v in NEEDED}
    label = pick["original"][0]
    cats = categorize(label, pick["original"][1], pick["mixed_rand"][1], pick["only_bg_t"][1],
                      full_raw=pick["original"][2], bg_raw=pick["only_bg_t"][2])
    return JudgedImages(ids, label, cats, {v: pick[v][1] for v in NEEDED}, {v: pick[v][3] for v in NEEDED})


def _take(v, ids):
    """(labels, preds, raw top-1 or None, confidences) of the images `ids`, in that order."""
    where = v.by_id()
    idx = np.array([where[i] for i in ids])
    return v.labels[idx], v.preds[idx], (v.raw[idx] if v.raw is not None else None), v.conf[idx]
