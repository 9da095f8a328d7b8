"""CounterAnimal's score, as its paper defines it (Wang et al., NeurIPS 2024, §3): the drop in accuracy
from the common group (each class on the background it is commonly photographed on) to the counter
group (the same class on a plausible but uncommon one), over the whole set and per class. Its
authors publish no code that scores it; this is the paper's definition written out.

    gap = acc(common) − acc(counter)                       over every image of each group
    gap[c] = acc(common images of c) − acc(counter images of c)

The groups hold other photographs, so each interval is a bootstrap that resamples each group on its
own (`unpaired_difference`). An image's class is the first part of its id ('296 ice bear/...',
`data.counteranimal`), so the summary is a pure function of the stored predictions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List

import numpy as np

from ...evaluation.metrics import Estimate, unpaired_difference, REPLICATES

if TYPE_CHECKING:  # eval's declaration reads this module's names, and declaring a measure imports no torch
    from ...evaluation.predict import Predictions

COMMON, COUNTER = "common", "counter"
#: Its stored metrics: the overall gap (variant ''), and each class's (variant: the class folder).
METRIC, CLASS_METRIC = "counter_gap", "counter_gap_class"


@dataclass
class CounterGap:
    overall: Estimate
    common: float  # accuracy on the common group
    counter: float  # accuracy on the counter group
    per_class: List[dict] = field(default_factory=list)

    def metric_rows(self) -> List[tuple]:
        g = self.overall
        rows = [(METRIC, "", g.value, g.lo, g.hi, g.n)]
        rows += [(CLASS_METRIC, c["class"], c["gap"], c["lo"], c["hi"], c["n_common"] + c["n_counter"])
                 for c in self.per_class]
        return rows

    def to_dict(self) -> dict:
        return {"gap": self.overall.as_dict(), "common": self.common, "counter": self.counter,
                "per_class": self.per_class}

    def lines(self) -> List[str]:
        g = self.overall
        w = max([5, *(len(c["class"]) for c in self.per_class)])
        return [f"CounterAnimal gap (common - counter): {100 * g.value:.1f}% [{100 * g.lo:.1f}%, {100 * g.hi:.1f}%] "
                f"(common {100 * self.common:.1f}%, counter {100 * self.counter:.1f}%, n={g.n})",
                f"  {'class':<{w}} {'common':>7} {'counter':>8} {'gap':>7}  {'95% CI':>17}",
                *(f"  {c['class']:<{w}} {100 * c['common']:6.1f}% {100 * c['counter']:7.1f}% {100 * c['gap']:6.1f}%  "
                  f"[{100 * c['lo']:5.1f}%, {100 * c['hi']:5.1f}%]" for c in self.per_class)]


def class_of(image_id: str) -> str:
    return image_id.split("/", 1)[0]


def counter_gap(common: "Predictions", counter: "Predictions", n_boot: int = REPLICATES, seed: int = 0) -> CounterGap:
    """The gap overall and per class (every class with images in both groups, in folder order)."""
    right = {COMMON: common.correct, COUNTER: counter.correct}
    by_class: Dict[str, Dict[str, List[bool]]] = {}
    for name, p in ((COMMON, common), (COUNTER, counter)):
        for image_id, ok in zip(p.image_ids, right[name]):
            by_class.setdefault(class_of(image_id), {COMMON: [], COUNTER: []})[name].append(bool(ok))
    per_class = []
    for cls in sorted(by_class):
        a, b = by_class[cls][COMMON], by_class[cls][COUNTER]
        if not a or not b:
            continue
        e = unpaired_difference(np.asarray(a), np.asarray(b), n_boot=n_boot, seed=seed)
        per_class.append({"class": cls, "common": float(np.mean(a)), "counter": float(np.mean(b)), "gap": e.value,
                          "lo": e.lo, "hi": e.hi, "n_common": len(a), "n_counter": len(b)})
    overall = unpaired_difference(right[COMMON], right[COUNTER], n_boot=n_boot, seed=seed)
    return CounterGap(overall, float(right[COMMON].mean()), float(right[COUNTER].mean()), per_class)
