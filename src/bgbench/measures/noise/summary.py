"""Accuracy curves and RFS of the noise probe, from its per-image rows (pure; no model, no store).

Accuracy per region and level is RIVAL10's (`compute_noise_robustness.py`, then the mean over
classes in `noise_analysis_plots.py`): per class (by label), correct predictions pooled over
trials over the class's noisy images, then the mean over classes (the pooled accuracy when the
classes are balanced). RFS per level uses those accuracies; the overall RFS uses them averaged
over the levels of the run's grid, so it compares only within one grid.

Intervals: a bootstrap over images, stratified by class, each image carrying all of its trials,
both regions and every level, so that a replicate recomputes every number on one resample.

Attribute regions ('attr:<name>') are probed on the images that have the attribute only: their
accuracy is the mean over the classes with such images (a class without any counts in no mean).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...evaluation.metrics import percentile_interval, stratified_weights, REPLICATES, interval
from ...store.schema import TableRow
from ..result import Summary, estimate_row
from ..common.regions import ATTRIBUTE_PREFIX
from .levels import grid_label, level_label

REGIONS = ("fg", "bg")


def rfs_array(acc_fg_noise: np.ndarray, acc_bg_noise: np.ndarray) -> np.ndarray:
    """Relative foreground sensitivity (RIVAL10) element-wise over arrays of accuracies (e.g. every
    bootstrap replicate at once): RFS = (acc_bg - acc_fg) / (2 min(a, 1 - a)), a = (acc_fg + acc_bg) / 2;
    0 when a is 0 or 1. Positive: noise on the foreground hurts more than noise on the background (the
    model looks at the object). It lies in [-1, 1]."""
    fg = np.asarray(acc_fg_noise, dtype=np.float64)
    bg = np.asarray(acc_bg_noise, dtype=np.float64)
    a = (fg + bg) / 2
    denom = 2 * np.minimum(a, 1 - a)
    safe = np.where(denom > 0, denom, 1.0)
    return np.where(np.isnan(a), np.nan, np.where(denom > 0, (bg - fg) / safe, 0.0))


@dataclass(frozen=True, slots=True, order=True)
class NoiseRow(TableRow):
    """One prediction of the probe (a row of its table): image `image_id` of class `label`, noised
    on `region` ('fg', 'bg' or 'attr:<name>') at `level` in draw `trial`; `correct` 1 when `pred`
    is the label."""

    image_id: str
    label: int
    region: str
    level: float
    trial: int
    correct: int
    pred: Optional[int] = None


@dataclass
class NoiseSummary(Summary):
    """curves[region]: one point per level (acc, lo, hi, images, trials), for 'fg', 'bg' and any
    'attr:<name>'; rfs[level] and the overall RFS with their intervals; the grid they were
    averaged over."""

    curves: Dict[str, List[dict]]
    rfs: Dict[float, dict]
    rfs_overall: float
    rfs_overall_interval: Tuple[float, float]
    grid: dict
    bootstrap: dict
    classes: int = 0
    images: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def grid_label(self) -> str:
        return grid_label(self.grid["name"], self.grid["kind"], self.grid["levels"])

    def label(self, level: float) -> str:
        return level_label(level, self.grid["kind"], self.grid["name"])

    def document(self) -> dict:
        lo, hi = self.rfs_overall_interval
        return {"grid": {**self.grid, "label": self.grid_label}, "bootstrap": self.bootstrap,
                "images": self.images, "classes": self.classes,
                "curves": self.curves, "rfs": {f"{lvl:g}": e for lvl, e in self.rfs.items()},
                "rfs_overall": self.rfs_overall, "rfs_overall_lo": lo, "rfs_overall_hi": hi}

    def metrics(self) -> List[tuple]:
        """Accuracy per region and level, RFS per level (variant: the level) and overall (variant
        ''), each with its bootstrap interval; n: images."""
        rows = [(f"noise_acc_{region}", f"{p['level']:g}", p["acc"], p["lo"], p["hi"], p["n"])
                for region, curve in self.curves.items() for p in curve]
        rows += [estimate_row("rfs", f"{lvl:g}", e, self.images) for lvl, e in self.rfs.items()]
        rows.append(("rfs", "", self.rfs_overall, *self.rfs_overall_interval, self.images))
        return rows

    def lines(self) -> List[str]:
        head = (f"noise sensitivity{self.of_run(' of run {}')}: accuracy (mean over "
                f"{self.classes} classes) and RFS, 95% bootstrap intervals over {self.images} images")
        lines = [head, f"grid {self.grid_label}",
                 f"{'level':>8} {'fg noise':>8} {'95% CI':>15} {'bg noise':>9} {'95% CI':>15} {'RFS':>7} "
                 f"{'95% CI':>17}"]
        for fg, bg in zip(self.curves["fg"], self.curves["bg"]):
            r = self.rfs[fg["level"]]
            lines.append(f"{self.label(fg['level']):>8} {_pct(fg['acc']):>7}% [{_pct(fg['lo']):>5},{_pct(fg['hi']):>5}]"
                         f" {_pct(bg['acc']):>8}% [{_pct(bg['lo']):>5},{_pct(bg['hi']):>5}]"
                         f" {r['value']:+7.3f} {interval(r['lo'], r['hi'], self.images, lambda v: f'{v:+.3f}', ',')}")
        lo, hi = self.rfs_overall_interval
        ci = interval(lo, hi, self.images, lambda v: f"{v:+.3f}")
        lines.append(f"RFS overall {self.rfs_overall:+.3f} {ci} on grid {self.grid_label}  "
                     "(the RFS of the accuracies averaged over the levels, not the mean of the levels' RFS, so it "
                     "may lie outside them; > 0: foreground noise hurts more; compare only within one grid)")
        return lines + self._attribute_lines()

    def _attribute_lines(self) -> List[str]:
        """Noise on each attribute alone: accuracy per level (mean over classes with the attribute)."""
        regions = [r for r in self.curves if r.startswith(ATTRIBUTE_PREFIX)]
        if not regions:
            return []
        levels = [self.label(p["level"]) for p in self.curves["fg"]]
        return ["noise on one attribute (images that have it): accuracy per level, mean over their classes",
                f"{'attribute':>16} {'images':>6} " + " ".join(f"{lv:>8}" for lv in levels),
                *(f"{r[len(ATTRIBUTE_PREFIX):]:>16} {self.curves[r][0]['n']:>6} "
                  + " ".join(f"{_pct(p['acc']):>7}%" for p in self.curves[r]) for r in regions)]


def _pct(v: float) -> str:
    return "nan" if v is None or math.isnan(v) else f"{100 * v:.1f}"


def correct_counts(rows: Sequence[NoiseRow], regions: Sequence[str] = REGIONS
                   ) -> Tuple[List[str], np.ndarray, List[float], np.ndarray, np.ndarray]:
    """From the rows: image ids, labels (N,), levels, and (N, region, level) arrays of correct
    trials and of trials (0 where an image was not probed)."""
    images = sorted({r.image_id for r in rows})
    levels = sorted({float(r.level) for r in rows})
    at = {i: k for k, i in enumerate(images)}
    lv = {v: k for k, v in enumerate(levels)}
    rg = {r: k for k, r in enumerate(regions)}
    labels = np.full(len(images), -1, dtype=np.int64)
    correct = np.zeros((len(images), len(regions), len(levels)))
    trials = np.zeros_like(correct)
    for r in rows:
        i = at[r.image_id]
        labels[i] = int(r.label)
        idx = (i, rg[r.region], lv[float(r.level)])
        correct[idx] += int(r.correct)
        trials[idx] += 1
    return images, labels, levels, correct, trials


def class_mean_accuracy(weights: np.ndarray, labels: np.ndarray, correct: np.ndarray,
                        trials: np.ndarray) -> np.ndarray:
    """(replicates, region, level): per class, weighted correct over weighted trials; mean over
    the classes with trials there (NaN where none has any). weights: (replicates, N) image counts
    (a row of ones is the data as it is)."""
    flat_c = correct.reshape(correct.shape[0], -1)
    flat_t = trials.reshape(trials.shape[0], -1)
    per_class = []
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an empty mean is NaN, by design
        for c in np.unique(labels):
            members = labels == c
            w = weights[:, members]
            per_class.append((w @ flat_c[members]) / (w @ flat_t[members]))
        acc = np.nanmean(per_class, axis=0)
    return acc.reshape(weights.shape[0], *correct.shape[1:])


def summarize(rows: Sequence[NoiseRow], grid: Optional[dict] = None, seed: int = 0,
              replicates: int = REPLICATES) -> NoiseSummary:
    """Curves, RFS and their bootstrap intervals from per-image rows (see module docstring).

    grid: {"name", "kind", "levels"} of the run (default: 'custom' sigma over the rows' levels).
    """
    regions = [*REGIONS, *sorted({r.region for r in rows} - set(REGIONS))]  # fg, bg, the attributes sorted
    images, labels, levels, correct, trials = correct_counts(rows, regions)
    grid = dict(grid or {"name": "custom", "kind": "sigma", "levels": levels})
    point = class_mean_accuracy(np.ones((1, len(images))), labels, correct, trials)[0]
    boot = class_mean_accuracy(stratified_weights(labels, replicates, seed), labels, correct, trials)
    curves: Dict[str, List[dict]] = {}
    for r, region in enumerate(regions):
        curves[region] = []
        for li, lvl in enumerate(levels):
            lo, hi = percentile_interval(boot[:, r, li])
            curves[region].append({"level": lvl, "acc": float(point[r, li]), "lo": lo, "hi": hi,
                                   "n": int((trials[:, r, li] > 0).sum()),
                                   "trials": int(trials[:, r, li].max()) if len(images) else 0})
    per_level = rfs_array(point[0], point[1])
    per_level_boot = rfs_array(boot[:, 0], boot[:, 1])
    rfs = {}
    for li, lvl in enumerate(levels):
        lo, hi = percentile_interval(per_level_boot[:, li])
        rfs[lvl] = {"value": float(per_level[li]), "lo": lo, "hi": hi}
    overall = float(rfs_array(point[0].mean(), point[1].mean()))
    overall_boot = rfs_array(boot[:, 0].mean(axis=1), boot[:, 1].mean(axis=1))
    return NoiseSummary(curves, rfs, overall, percentile_interval(overall_boot), grid,
                        {"replicates": replicates, "seed": seed, "stratified_by": "label"},
                        classes=int(np.unique(labels).size), images=len(images))
