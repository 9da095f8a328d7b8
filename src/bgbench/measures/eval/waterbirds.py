"""Waterbirds scored as `wilds`' `WaterbirdsDataset.eval` scores it (`wilds/datasets/waterbirds_dataset.py`,
wilds 2.0.0), pure: a function of each image's correctness, bird (y) and place.

- A group is (place, y): its `CombinatorialGrouper` over ('background', 'y'); a group's accuracy is
  the mean correctness of its images (`Accuracy.compute_group_wise`; 0 for a group with none).
- `acc_wg`, the worst-group accuracy: the lowest accuracy among the groups that have images
  (`_compute_group_wise`: `group_metrics[group_counts > 0]`), however few: wilds sets no minimum.
- `adj_acc_avg`, the average accuracy: the four groups' accuracies weighted by their images in the
  released training split, constants in wilds' code (3498 landbirds on land, 184 on water, 56
  waterbirds on land, 1057 on water), not counted from the tree read; wilds drops the plain mean
  (`acc_avg`) because the val and test splits are balanced otherwise than training. A group with
  no images in the split weighs in with wilds' accuracy 0.

The intervals are bgbench's: the worst group's 95% Wilson interval, and for `adj_acc_avg` a
percentile bootstrap that resamples each group's images on its own (the weights are constants).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...data.facts import WATERBIRDS as KIND, WATERBIRDS_CLASSES as CLASSES, WATERBIRDS_PLACES as PLACES
from ...evaluation.metrics import Estimate, wilson_interval, REPLICATES, interval
from ...result import Result

if TYPE_CHECKING:
    from ...data.layout import Layout
    from ...evaluation.predict import Predictions

#: (y, place) -> images of the group in Waterbirds' released training split: `adj_acc_avg`'s weights.
TRAINING_COUNTS: Dict[Tuple[int, int], int] = {(0, 0): 3498, (0, 1): 184, (1, 0): 56, (1, 1): 1057}
#: The stored metrics, under wilds' own keys.
ADJ_ACC_AVG, ACC_WG = "adj_acc_avg", "acc_wg"
VARIANT = "original"


@dataclass
class WaterbirdsScore(Result):
    """wilds' figures of one eval on a Waterbirds split: each group (y, place, its name, n, correct,
    acc), the average accuracy weighted by the training split, the worst group's accuracy."""

    groups: List[dict]
    adj_acc_avg: Estimate
    acc_wg: Estimate
    worst_group: str
    extra: dict = field(default_factory=dict)

    def metric_rows(self) -> List[tuple]:
        return [(name, VARIANT, e.value, e.lo, e.hi, e.n) for name, e in ((ADJ_ACC_AVG, self.adj_acc_avg),
                                                                             (ACC_WG, self.acc_wg))]

    def to_dict(self) -> dict:
        return {"source": "wilds WaterbirdsDataset.eval", ADJ_ACC_AVG: self.adj_acc_avg.as_dict(),
                ACC_WG: self.acc_wg.as_dict(), "worst_group": self.worst_group, "groups": self.groups,
                "training_counts": {_name(y, p): k for (y, p), k in TRAINING_COUNTS.items()}}

    def text(self) -> str:
        pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
        a, w = self.adj_acc_avg, self.acc_wg
        return (f"Waterbirds, as wilds' WaterbirdsDataset.eval: average accuracy (adj_acc_avg, groups weighted by "
                f"the training split) {pct(a.value)} {interval(a.lo, a.hi, a.n, pct)}; worst-group accuracy "
                f"(acc_wg) {pct(w.value)} {interval(w.lo, w.hi, w.n, pct)} on {self.worst_group}")


def _name(y: int, place: int) -> str:
    return f"{CLASSES[y]} on {PLACES[place]}"


def waterbirds_score(correct: Sequence[bool], y: Sequence[int], place: Sequence[int], n_boot: int = REPLICATES,
                     seed: int = 0) -> WaterbirdsScore:
    """wilds' `adj_acc_avg` and `acc_wg` of images whose correctness, bird and place are given."""
    correct = np.asarray(correct, dtype=bool)
    y, place = np.asarray(y, dtype=np.int64), np.asarray(place, dtype=np.int64)
    members = {g: np.flatnonzero((y == g[0]) & (place == g[1])) for g in TRAINING_COUNTS}
    groups, accs = [], {}
    for (gy, gp), idx in members.items():
        k, n = int(correct[idx].sum()), len(idx)
        accs[(gy, gp)] = k / n if n else 0.0
        groups.append({"group": _name(gy, gp), "y": gy, "place": gp, "n": n, "correct": k, "acc": accs[(gy, gp)]})
    total = sum(TRAINING_COUNTS.values())
    weights = {g: c / total for g, c in TRAINING_COUNTS.items()}
    value = sum(weights[g] * accs[g] for g in TRAINING_COUNTS)
    rng = np.random.default_rng(seed)
    boots = np.zeros(n_boot)
    for g, idx in members.items():
        if len(idx):
            boots += weights[g] * correct[idx][rng.integers(0, len(idx), (n_boot, len(idx)))].mean(axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    present = [r for r in groups if r["n"]]
    worst = min(present, key=lambda r: r["acc"])  # ties: the first in (y, place) order; the value is wilds'
    wlo, whi = wilson_interval(worst["correct"], worst["n"])
    return WaterbirdsScore(groups=groups, adj_acc_avg=Estimate(float(value), float(lo), float(hi), int(len(correct))),
                           acc_wg=Estimate(worst["acc"], wlo, whi, worst["n"]), worst_group=worst["group"])


def waterbirds_results(layout: "Layout", predictions: Dict[str, "Predictions"],
                       seed: int = 0) -> Optional[WaterbirdsScore]:
    """wilds' figures of an eval on a Waterbirds split (`data.waterbirds`), else None."""
    if layout.kind != KIND or VARIANT not in predictions:
        return None
    p = predictions[VARIANT]
    return waterbirds_score(p.correct, p.labels, [layout.places[i] for i in p.image_ids], seed=seed)
