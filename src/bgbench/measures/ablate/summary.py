"""Drops in accuracy and in true-class probability after ablating a region, from per-image rows.

As RIVAL10's `attr_importance.py` and its heatmaps: a region is evaluated on the images that have
it (every image has a foreground and a background; an attribute only where its mask is), and

- accuracy drop = clean accuracy − ablated accuracy, pooled over those images;
- probability drop = the mean over those images of p(true class | clean) − p(true class | ablated);
- beside them the accuracies and mean true-class probabilities themselves, clean and ablated
  (Hard ImageNet's `ablations.py` reports the ablated ones: `eval_under_ablation`'s accuracy and
  the mean of its true-class confidences, lines 185-203, for its ablations 'none', the object
  grayed ('fg'), its box grayed ('bbox') and its box tiled ('tile'));
- the accuracies themselves are stored too, with their intervals (metric `ablation_acc`, variant
  the region, and 'none' for the clean accuracy over every image): Hard ImageNet's figures, which
  its columns of the scorecard show;

each overall and per class, with 95% intervals from a bootstrap over images (resampled within
their class, each image with its clean and ablated outcomes together). Pure: no model, no store.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence

import numpy as np

from ...evaluation.metrics import percentile_interval, stratified_weights, REPLICATES, interval
from ..common.regions import region_label
from ..result import Summary, estimate_row
from ...store.schema import TableRow

CLEAN = "none"  # the region of the unablated image (torch-free here: the CLI's --help imports this module)
#: The regions an image can have, in display order (attributes follow, sorted); 'bbox' and 'tile' only
#: in a run on Hard ImageNet's data (`scoring` in its config: `common.protocols`).
OBJECT_REGIONS = ("fg", "bg", "bbox", "tile")


@dataclass(frozen=True, slots=True, order=True)
class AblateRow(TableRow):
    """One outcome of the probe (a row of its table): image `image_id` of class `label` with
    `region` grayed ('none': the clean image), its prediction `pred`, `correct` 1 when that is the
    label, and `true_prob`, the probability of the true class."""

    image_id: str
    label: int
    region: str
    pred: int
    correct: int
    true_prob: float


@dataclass
class AblationSummary(Summary):
    """regions[region]: overall drops; per_class[region][class name]: the same within the class;
    clean: the clean accuracy over every image {value, lo, hi, n}."""

    regions: Dict[str, dict]
    per_class: Dict[str, Dict[str, dict]]
    images: int
    bootstrap: dict
    extra: dict = field(default_factory=dict)
    clean: dict = field(default_factory=dict)

    def document(self) -> dict:
        return {"run_id": self.run_id, "images": self.images, "bootstrap": self.bootstrap,
                "regions": self.regions, "per_class": self.per_class}

    def metrics(self) -> List[tuple]:
        """ablation_acc_drop / ablation_prob_drop (variant: the region; per class 'region/class');
        ablation_acc, the accuracy under each region's ablation (variant: the region) and clean
        (variant 'none', over every image)."""
        rows = [estimate_row("ablation_acc", CLEAN, self.clean)] if self.clean else []
        for region, e in self.regions.items():
            rows += [estimate_row("ablation_acc_drop", region, e["acc_drop"], e["n"]),
                     estimate_row("ablation_prob_drop", region, e["prob_drop"], e["n"]),
                     estimate_row("ablation_acc", region, e["ablated"], e["n"])]
            for cls, c in self.per_class[region].items():
                rows += [estimate_row("ablation_acc_drop", f"{region}/{cls}", c["acc_drop"], c["n"]),
                         estimate_row("ablation_prob_drop", f"{region}/{cls}", c["prob_drop"], c["n"])]
        return rows

    def lines(self) -> List[str]:
        head = (f"ablation{self.of_run()}: region replaced by gray (0.5); drops "
                f"from the clean image on the images that have the region, 95% bootstrap intervals over images")
        lines = [head, f"{'region':>20} {'images':>6} {'clean':>6} {'ablated':>7} {'acc drop':>9} {'95% CI':>16} "
                       f"{'p drop':>7} {'95% CI':>16}"]
        for region, e in self.regions.items():
            a, p = e["acc_drop"], e["prob_drop"]
            lines.append(f"{region_label(region):>20} {e['n']:>6} {_pct(e['clean_acc']):>5}% {_pct(e['ablated_acc']):>6}%"
                         f" {_pct(a['value'], True):>8}% {_ci(a, e['n']):>16}"
                         f" {_pct(p['value'], True):>6}% {_ci(p, e['n']):>16}")
        return lines


def _ci(e: dict, n: int) -> str:
    return interval(e["lo"], e["hi"], n, lambda v: f"{_pct(v, True):>6}", ",") if e["lo"] is not None else \
        f"[{_pct(e['lo'], True):>6},{_pct(e['hi'], True):>6}]"


def _pct(v, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"




def summarize_ablation(rows: Sequence[AblateRow], class_name: Callable[[int], str], seed: int = 0,
                       replicates: int = REPLICATES) -> AblationSummary:
    """From the probe's rows, region 'none' the clean image."""
    images = sorted({r.image_id for r in rows})
    at = {i: k for k, i in enumerate(images)}
    labels = np.full(len(images), -1, dtype=np.int64)
    by_region: Dict[str, Dict[int, tuple]] = {}
    for r in rows:
        labels[at[r.image_id]] = int(r.label)
        by_region.setdefault(r.region, {})[at[r.image_id]] = (float(r.correct), float(r.true_prob))
    clean = by_region.pop(CLEAN, {})
    weights = stratified_weights(labels, replicates, seed)
    order = [r for r in OBJECT_REGIONS if r in by_region] + sorted(r for r in by_region if r not in OBJECT_REGIONS)
    regions, per_class = {}, {}
    for region in order:
        idx = np.array(sorted(i for i in by_region[region] if i in clean), dtype=np.int64)
        c0 = np.array([clean[i][0] for i in idx])
        p0 = np.array([clean[i][1] for i in idx])
        c1 = np.array([by_region[region][i][0] for i in idx])
        p1 = np.array([by_region[region][i][1] for i in idx])
        regions[region] = _drops(weights[:, idx], c0, c1, p0, p1)
        per_class[region] = {}
        for c in np.unique(labels[idx]):
            k = labels[idx] == c
            per_class[region][class_name(int(c))] = _drops(weights[:, idx[k]], c0[k], c1[k], p0[k], p1[k])
    every = np.array(sorted(clean), dtype=np.int64)
    return AblationSummary(regions, per_class, images=len(images),
                           bootstrap={"replicates": replicates, "seed": seed, "stratified_by": "label"},
                           clean={**_accuracy(weights[:, every], np.array([clean[i][0] for i in every])),
                                  "n": int(every.size)})


def _estimate(point: float, reps: np.ndarray) -> dict:
    """A value with the percentile interval of its bootstrap replicates."""
    lo, hi = percentile_interval(reps)
    return {"value": point, "lo": lo, "hi": hi}


def _accuracy(w: np.ndarray, correct: np.ndarray) -> dict:
    """The pooled accuracy of these images and its bootstrap interval (w: their resample counts)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ correct) / w.sum(axis=1)
    return _estimate(float(correct.mean()) if correct.size else float("nan"), reps)


def _drops(w: np.ndarray, c0, c1, p0, p1) -> dict:
    """Point values and bootstrap intervals of the drops over these images (w: their resample counts)."""
    n = len(c0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = w.sum(axis=1)
        acc_rep = (w @ (c0 - c1)) / total
        prob_rep = (w @ (p0 - p1)) / total
    nan = float("nan")
    return {"n": n, "clean_acc": float(c0.mean()) if n else nan, "ablated_acc": float(c1.mean()) if n else nan,
            "clean_prob": float(p0.mean()) if n else nan, "ablated_prob": float(p1.mean()) if n else nan,
            "ablated": _accuracy(w, c1),
            "acc_drop": _estimate(float((c0 - c1).mean()) if n else nan, acc_rep),
            "prob_drop": _estimate(float((p0 - p1).mean()) if n else nan, prob_rep)}
