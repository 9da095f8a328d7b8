"""Feature attribution against attributes (RIVAL10 §6), pure: IoUs in, rankings out.

For an image with attribute a, feature k's IoU is that of its activation map (upsampled to the
image, binarized at 0.5 of its maximum: `feature_maps`) with a's mask. A *group* is an attribute
on the images of one class that have it, or on all images that have it ('all'). A feature's score
in a group is its mean IoU over the group's images; the group's best features are the top ones.

`top_features` picks them from every image's full IoU vector (at probe time); the per-image rows
kept for them, (image_id, label, attribute, feature, iou), are all `summarize_attribution` needs:
it recomputes every group's ranking with a 95% interval (bootstrap over the group's images).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...evaluation.metrics import REPLICATES, percentile_interval
from ..result import Summary
from ...store.schema import TableRow

EPS = 1e-10  # RIVAL10's, in IoU's numerator and denominator
ALL = "all"  # the group of every class


def top_features(records: Sequence[Tuple[int, str, np.ndarray]], top: int) -> Dict[Tuple[str, object], List[int]]:
    """(attribute, label or 'all') -> its `top` features by mean IoU (ties: lower index first).

    records: (label, attribute, IoU of every feature (K,)) per image and attribute it has.
    """
    sums: Dict[Tuple[str, object], np.ndarray] = {}
    counts: Dict[Tuple[str, object], int] = {}
    for label, attribute, ious in records:
        for group in ((attribute, int(label)), (attribute, ALL)):
            sums[group] = sums.get(group, 0) + np.asarray(ious, dtype=np.float64)
            counts[group] = counts.get(group, 0) + 1
    return {group: [int(k) for k in np.argsort(-(total / counts[group]), kind="stable")[:top]]  # by mean IoU
            for group, total in sums.items()}


@dataclass(frozen=True, slots=True, order=True)
class AttributionRow(TableRow):
    """One stored IoU (a row of the probe's table): feature `feature`'s map against attribute
    `attribute`'s mask on image `image_id` of class `label`."""

    image_id: str
    label: int
    attribute: str
    feature: int
    iou: float


@dataclass
class AttributionSummary(Summary):
    """groups[attribute][class name or 'all']: ranked features (feature, mean IoU, lo, hi) and images;
    best[attribute]: the (class, feature, IoU) with the highest mean IoU over the attribute's groups."""

    groups: Dict[str, Dict[str, dict]]
    best: Dict[str, dict]
    images: int
    bootstrap: dict

    def document(self) -> dict:
        return {"run_id": self.run_id, "images": self.images, "mean_best_iou": self.mean_best_iou,
                "bootstrap": self.bootstrap, "best": self.best, "groups": self.groups}

    @property
    def mean_best_iou(self) -> Optional[float]:
        """The headline: the mean over attributes of their best feature's mean IoU (no interval:
        the attributes' groups hold different images)."""
        values = [b["iou"] for b in self.best.values() if not math.isnan(b["iou"])]
        return float(np.mean(values)) if values else None

    def metrics(self) -> List[tuple]:
        """attribution_iou (variant: the attribute) is the best IoU of any class group; per group
        'attribute/class' (or '/all'), the best feature's mean IoU; variant '': the mean over
        attributes of the best IoU (the headline)."""
        rows = [("attribution_iou", "", self.mean_best_iou, None, None, self.images)]
        for attribute, b in self.best.items():
            rows.append(("attribution_iou", attribute, b["iou"], b["lo"], b["hi"], b["images"]))
            for cls, g in self.groups[attribute].items():
                f = g["features"][0]
                rows.append(("attribution_iou", f"{attribute}/{cls}", f["iou"], f["lo"], f["hi"], g["images"]))
        return rows

    def lines(self) -> List[str]:
        head = (f"feature attribution{self.of_run()}: per attribute, the "
                "penultimate-layer feature whose map (>= 0.5 of its max) best overlaps the attribute's mask")
        lines = [head, f"{'attribute':>16} {'class':>14} {'feature':>7} {'mean IoU':>8} {'95% CI':>15} "
                       f"{'images':>6} {'all classes: feature, IoU':>26}"]
        for attribute, b in self.best.items():
            a = self.groups[attribute][ALL]["features"][0]
            lines.append(f"{attribute:>16} {b['class']:>14} {b['feature']:>7} {b['iou']:>8.3f} "
                         f"[{b['lo']:.3f}, {b['hi']:.3f}] {b['images']:>6} {a['feature']:>15}, {a['iou']:.3f}")
        return lines



def summarize_attribution(rows: Sequence[AttributionRow], class_name: Callable[[int], str], seed: int = 0,
                          replicates: int = REPLICATES) -> AttributionSummary:
    """From the probe's rows: every group's features ranked by mean IoU."""
    by_group: Dict[Tuple[str, object], Dict[int, Dict[str, float]]] = {}
    for r in rows:
        for group in ((r.attribute, int(r.label)), (r.attribute, ALL)):
            by_group.setdefault(group, {}).setdefault(int(r.feature), {})[r.image_id] = float(r.iou)
    rng = np.random.default_rng(seed)
    groups: Dict[str, Dict[str, dict]] = {}
    for (attribute, cls) in sorted(by_group, key=lambda g: (g[0], g[1] != ALL, str(g[1]))):
        features = by_group[(attribute, cls)]
        images = sorted(set().union(*features.values()))
        draws = rng.integers(0, len(images), (replicates, len(images)))
        ranked = []
        for feature, per_image in features.items():
            if len(per_image) != len(images):
                continue  # a feature kept for another group, not measured on all of this one's images
            values = np.array([per_image[i] for i in images])
            lo, hi = percentile_interval(values[draws].mean(axis=1))
            ranked.append({"feature": feature, "iou": float(values.mean()), "lo": lo, "hi": hi})
        ranked.sort(key=lambda f: (-f["iou"], f["feature"]))
        name = cls if cls == ALL else class_name(int(cls))
        groups.setdefault(attribute, {})[name] = {"images": len(images), "features": ranked}
    best = {}
    for attribute, per in groups.items():
        cls, g = max(((c, g) for c, g in per.items() if c != ALL), key=lambda cg: cg[1]["features"][0]["iou"])
        best[attribute] = {"class": cls, "images": g["images"], **g["features"][0]}
    n = len({r.image_id for r in rows})
    return AttributionSummary(groups, best, images=n,
                              bootstrap={"replicates": replicates, "seed": seed, "over": "the group's images"})
