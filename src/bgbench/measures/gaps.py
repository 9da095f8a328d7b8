"""Accuracy gaps between two arms, pure: the shortcut measures' one summary shape.

Whac-A-Mole's table reads every shortcut as acc(shifted) - acc(reference) (`eval_shortcuts/
eval_multiple_shortcuts.py`: `in_w_gap = in_w_acc - in_1k_acc`, `sin_gap`, `in_r_gap`, and
`carton_gap` on the carton class's images): negative when the shift costs accuracy. Each arm's
accuracy carries its Wilson interval; the gap its percentile bootstrap interval, *paired* over the
images both arms hold when they are the same images (a watermarked copy, a stylized copy under the
same file stem), resampled per arm when they are not (ImageNet-R against ImageNet's val).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ..evaluation.metrics import Estimate, accuracy, paired_difference, percent, unpaired_difference, REPLICATES
from .result import Summary, estimate_row

Rows = Sequence[Any]  # the arms' rows (`arms.ArmRow`: arm, image_id, label, pred)


def stem(image_id: str) -> str:
    """The key a stylized copy shares with its original: the file name without its extension."""
    return PurePosixPath(image_id).stem


def correct_by(rows: Rows, arm: str, keep: Optional[Callable[[int], bool]] = None,
               key: Callable[[str], str] = str) -> Dict[str, bool]:
    """key(image id) -> correct, for the rows of `arm` whose label `keep` accepts."""
    return {key(r.image_id): r.pred == r.label for r in rows if r.arm == arm and (keep is None or keep(int(r.label)))}


def gap(reference: Dict[str, bool], shifted: Dict[str, bool], seed: int, replicates: int) -> dict:
    """acc(shifted) - acc(reference) with its interval: paired when both hold the same images."""
    if reference and set(reference) == set(shifted):
        ids = sorted(reference)
        est = paired_difference(np.array([shifted[i] for i in ids]), np.array([reference[i] for i in ids]),
                                n_boot=replicates, seed=seed)
        return {**est.as_dict(), "paired": True}
    # sorted by image: the interval must not depend on the order rows come in (a fresh run's, the store's)
    est = unpaired_difference(np.array([shifted[i] for i in sorted(shifted)]),
                              np.array([reference[i] for i in sorted(reference)]), n_boot=replicates, seed=seed)
    return {**est.as_dict(), "paired": False}


def arm_accuracy(correct: Dict[str, bool]) -> dict:
    return accuracy(list(correct.values())).as_dict() if correct else Estimate(math.nan, math.nan, math.nan, 0).as_dict()


@dataclass
class GapSummary(Summary):
    """A shortcut measure's summary: each arm's accuracy, the gap, and named gaps on a subset of
    classes (`extra`: the Carton gap).

    accuracy[arm], gap and extra[name] hold value, lo, hi, n (NaN, shown as '–', where an arm or a
    subset has no image)."""

    title: str
    metric: str  # the gap's metric name ('watermark_gap', 'sin_gap', 'in_r_gap')
    arms: List[str]  # reference first
    accuracy: Dict[str, dict]
    gap: dict
    extra: Dict[str, dict] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def document(self) -> dict:
        return {"metric": self.metric, "arms": self.arms, "accuracy": self.accuracy, "gap": self.gap,
                "extra": self.extra}

    def metrics(self) -> List[tuple]:
        """<metric> (variant ''): the gap; <metric>_accuracy (variant: the arm); each extra gap by
        its name, and its arms' accuracies as <name>_accuracy."""
        rows = [estimate_row(self.metric, "", self.gap)]
        rows += [estimate_row(f"{self.metric}_accuracy", arm, a) for arm, a in self.accuracy.items()]
        for name, e in self.extra.items():
            rows.append(estimate_row(name, "", e))
            rows += [estimate_row(f"{name}_accuracy", arm, a) for arm, a in e.get("accuracy", {}).items()]
        return rows

    def lines(self) -> List[str]:
        lines = [f"{self.title}{self.of_run()}", f"{'':<22}{'acc':>8}  {'95% CI':>17}  {'n':>6}",
                 *(_line(arm, a) for arm, a in self.accuracy.items()),
                 _line(f"{self.metric}", self.gap, signed=True) +
                 ("  (paired over the same images)" if self.gap.get("paired") else "  (independent samples)")]
        for name, e in self.extra.items():
            lines += [_line(f"{name.removesuffix('_gap')} {arm}", a) for arm, a in e.get("accuracy", {}).items()]
            lines.append(_line(name, e, signed=True))
        return lines + self.notes


def resampling(config: dict) -> tuple:
    """(seed, bootstrap replicates) of a run, as its config records them."""
    return int(config.get("seed", 0)), int(config.get("bootstrap_replicates", REPLICATES))


def two_arms(title: str, metric: str, rows: Rows, reference: str, shifted: str, config: dict,
             key: Callable[[str], str] = str) -> GapSummary:
    """The summary of a shortcut measured by two arms of `rows`: each arm's accuracy and
    acc(shifted) - acc(reference), resampled under the run's seed and replicates; images matched
    across the arms by `key` of their ids."""
    seed, reps = resampling(config)
    ref, sh = correct_by(rows, reference, key=key), correct_by(rows, shifted, key=key)
    return GapSummary(title, metric, [reference, shifted], {reference: arm_accuracy(ref), shifted: arm_accuracy(sh)},
                      gap(ref, sh, seed, reps))


def _line(name: str, e: dict, signed: bool = False) -> str:
    value = e["value"]
    if value is None or value != value:
        return f"{name:<22}{'–':>8}  {'':>17}  {e['n']:>6}"
    fmt = (lambda v: f"{100 * v:+.1f}%") if signed else (lambda v: percent(v))
    return f"{name:<22}{fmt(value):>8}  [{fmt(e['lo']):>7}, {fmt(e['hi']):>7}]  {e['n']:>6}"

