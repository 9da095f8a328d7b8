"""The paper's prediction categories (Table 3), from a per-image table or a stored eval run; no model is loaded.

Each image is judged on ORIGINAL (the full image), MIXED-RAND (a proxy for the foreground
alone) and ONLY-BG-T (a proxy for the background alone); see DESIGN.md §2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from ..errors import BgbenchError
from ..store import Store
from .tables import RunTable, stored_table

CATEGORIES = ("BG Irrelevant", "BG Required", "BG+FG Required", "BG Fools", "Other")
NEEDED = ("original", "mixed_rand", "only_bg_t")


def categorize(label: np.ndarray, full: np.ndarray, fg: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Category index (into CATEGORIES) of each image from its three predictions.

    full/fg/bg: predictions on ORIGINAL, MIXED-RAND and ONLY-BG-T.
    """
    label, full, fg, bg = (np.asarray(a) for a in (label, full, fg, bg))
    full_ok, fg_ok, bg_ok = full == label, fg == label, bg == label
    out = np.full(label.shape, CATEGORIES.index("Other"), dtype=np.int64)
    out[full_ok & ~fg_ok & bg_ok] = CATEGORIES.index("BG Required")
    out[full_ok & ~fg_ok & ~bg_ok] = CATEGORIES.index("BG+FG Required")
    out[~full_ok & fg_ok & (bg == full)] = CATEGORIES.index("BG Fools")
    out[full_ok == fg_ok] = CATEGORIES.index("BG Irrelevant")
    return out


def shares(cats: np.ndarray) -> Dict[str, float]:
    n = max(len(cats), 1)
    counts = np.bincount(cats, minlength=len(CATEGORIES))
    return {c: float(counts[i]) / n for i, c in enumerate(CATEGORIES)}


@dataclass
class CategoryResult:
    """Shares of each category, overall and per class (each sums to 1)."""

    run_id: Optional[int]  # None for a table that was never stored
    overall: Dict[str, float]
    per_class: Dict[str, Dict[str, float]]
    n: int
    counts: Dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "overall": self.overall, "per_class": self.per_class, "n": self.n}

    def table(self) -> str:
        short = {"BG Irrelevant": "irrel", "BG Required": "bg-req", "BG+FG Required": "bg+fg",
                 "BG Fools": "fools", "Other": "other"}
        head = f"{'class':<24}" + "".join(f"{short[c]:>8}" for c in CATEGORIES)
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        lines = [f"prediction categories of {of} (paper Table 3; % of {self.n} images)", head]
        for name, s in [*self.per_class.items(), ("overall", self.overall)]:
            lines.append(f"{name:<24}" + "".join(f"{100 * s[c]:7.1f}%" for c in CATEGORIES))
        return "\n".join(lines)


def prediction_categories(store: Store, run_id: int, mapping: Optional[str] = None) -> CategoryResult:
    """Table 3 of a stored eval run, overall and per class (images in all three variants)."""
    return categories_of(stored_table(store, run_id, mapping=mapping, variants=NEEDED))


def categories_of(table: RunTable) -> CategoryResult:
    """Table 3 of a per-image table, overall and per class (images in all three variants)."""
    table.require(NEEDED, f"prediction categories need {', '.join(NEEDED)} "
                          f"(bgbench eval --variants {' '.join(NEEDED)})")
    p = table.variants
    ids = sorted(set(p["original"].image_ids) & set(p["mixed_rand"].image_ids) & set(p["only_bg_t"].image_ids))
    if not ids:
        raise BgbenchError(f"{table.name}: no image is in all of {', '.join(NEEDED)}")
    pick = {v: _take(p[v], ids) for v in NEEDED}
    label = pick["original"][0]
    cats = categorize(label, pick["original"][1], pick["mixed_rand"][1], pick["only_bg_t"][1])
    classes = table.classes
    per_class = {}
    for c in np.unique(label):
        name = classes[c] if c < len(classes) else str(int(c))
        per_class[name] = shares(cats[label == c])
    counts = dict(zip(CATEGORIES, np.bincount(cats, minlength=len(CATEGORIES)).tolist()))
    return CategoryResult(run_id=table.run_id, overall=shares(cats), per_class=per_class, n=len(ids), counts=counts)


def _take(v, ids):
    where = v.by_id()
    idx = np.array([where[i] for i in ids])
    return v.labels[idx], v.preds[idx]
