"""Worst-group accuracy, pure: per-group accuracy with Wilson intervals, the worst group and the
mean over groups, the vocabulary of the spurious-correlation literature (Waterbirds, CelebA).

On IN-9's mixed variants a group is (object class, background class): MIXED-RAND puts every object
on every class's backgrounds, so a model that reads backgrounds is worst on the groups whose
background belongs to a class it confuses with the object's. The groups come from the dataset's
manifest (the background each mixed image was pasted on); the predictions from a stored eval run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...evaluation.metrics import wilson_interval

#: Groups with fewer images are listed but cannot be the worst one (their accuracy is too noisy).
MIN_IMAGES = 10


@dataclass
class GroupAccuracy:
    """groups: one row per (class, background) with n, accuracy and its 95% Wilson interval; worst:
    the lowest-accuracy group of at least `min_images` images (None when none has that many)."""

    variant: str
    groups: List[dict]
    worst: Optional[dict]
    mean: Optional[float]
    overall: dict
    min_images: int = MIN_IMAGES
    run_id: Optional[int] = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "variant": self.variant, "min_images": self.min_images,
                "worst_group": self.worst, "mean_group_accuracy": self.mean, "overall": self.overall,
                "groups": self.groups}

    def table(self) -> str:
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        eligible = sum(g["n"] >= self.min_images for g in self.groups)
        lines = [f"groups of {of} on {self.variant}: (object class, background class), 95% Wilson intervals; "
                 f"{len(self.groups)} groups, {eligible} with >= {self.min_images} images"]
        if self.worst is not None:
            w = self.worst
            lines.append(f"worst group: {w['class']} on {w['background']} backgrounds, {_pct(w['acc'])}% "
                         f"[{_pct(w['lo'])}, {_pct(w['hi'])}] of {w['n']} images")
        else:
            lines.append(f"worst group: none has {self.min_images} images (see --min-images)")
        if self.mean is not None:
            lines.append(f"mean over groups {_pct(self.mean)}%; overall {_pct(self.overall['acc'])}% "
                         f"[{_pct(self.overall['lo'])}, {_pct(self.overall['hi'])}] of {self.overall['n']} images")
        lines.append(f"{'class':>16} {'background':>16} {'n':>5} {'accuracy':>8} {'95% CI':>15}")
        for g in sorted(self.groups, key=lambda g: (g["acc"], g["class"], g["background"])):
            lines.append(f"{g['class']:>16} {g['background']:>16} {g['n']:>5} {_pct(g['acc']):>7}% "
                         f"[{_pct(g['lo']):>5},{_pct(g['hi']):>5}]")
        return "\n".join(lines)


def _pct(v: float) -> str:
    return f"{100 * v:.1f}"


def group_accuracy(correct: Sequence[bool], groups: Sequence[Tuple[str, str]], variant: str = "",
                   min_images: int = MIN_IMAGES) -> GroupAccuracy:
    """Per-group accuracy of the images' `correct` flags, each image in `groups[i]` = (class,
    background); the worst group among those with at least `min_images` images (ties: the first by
    class, then background), and the unweighted mean over all groups."""
    correct = np.asarray(correct, dtype=bool)
    by_group: Dict[Tuple[str, str], List[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(tuple(g), []).append(i)
    rows = []
    for (cls, bg), idx in sorted(by_group.items()):
        k, n = int(correct[idx].sum()), len(idx)
        lo, hi = wilson_interval(k, n)
        rows.append({"class": cls, "background": bg, "n": n, "correct": k, "acc": k / n, "lo": lo, "hi": hi})
    eligible = [r for r in rows if r["n"] >= min_images]
    worst = min(eligible, key=lambda r: (r["acc"], r["class"], r["background"])) if eligible else None
    k, n = int(correct.sum()), len(correct)
    lo, hi = wilson_interval(k, n) if n else (float("nan"), float("nan"))
    overall = {"acc": k / n if n else float("nan"), "lo": lo, "hi": hi, "n": n}
    mean = float(np.mean([r["acc"] for r in rows])) if rows else None
    return GroupAccuracy(variant, rows, worst, mean, overall, min_images)
