"""Worst-group accuracy, pure: per-group accuracy with Wilson intervals, the worst group and the
mean over groups, the vocabulary of the spurious-correlation literature (Waterbirds, CelebA).
Shared: eval reports it with every run (`group_results`), `bgbench analyze groups` reads it back.

On IN-9's mixed variants a group is (object class, background class): MIXED-RAND puts every object
on every class's backgrounds, so a model that reads backgrounds is worst on the groups whose
background belongs to a class it confuses with the object's. The groups come from the dataset's
manifest (the background each mixed image was pasted on); the predictions from a stored eval run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ...console import plural
from ...data.facts import IN9
from ...evaluation.metrics import wilson_interval
from ...result import Result

if TYPE_CHECKING:
    from ...data.layout import Layout
    from ...evaluation.predict import Predictions

#: Groups with fewer images are listed but cannot be the worst one (their accuracy is too noisy).
MIN_IMAGES = 10
#: A worst group is the lowest of at least two groups that meet `MIN_IMAGES`: with one, "the worst"
#: would only be the one group measured, however well the model does on it.
MIN_GROUPS = 2


@dataclass
class GroupAccuracy(Result):
    """groups: one row per group (its `group` name; (class, background) groups also give `class` and
    `background`) with n, accuracy and its 95% Wilson interval; worst: the lowest-accuracy group of
    at least `min_images` images, when at least `MIN_GROUPS` groups have that many (None otherwise:
    `not_available` says why)."""

    variant: str
    groups: List[dict]
    worst: Optional[dict]
    mean: Optional[float]
    overall: dict
    min_images: int = MIN_IMAGES
    run_id: Optional[int] = None
    extra: dict = field(default_factory=dict)

    @property
    def eligible(self) -> int:
        """Groups with at least `min_images` images: those the worst group is chosen among."""
        return sum(g["n"] >= self.min_images for g in self.groups)

    @property
    def not_available(self) -> Optional[str]:
        """Why there is no worst group ('n/a: 1 group of at least 10 images'), or None when there is one."""
        if self.worst is not None:
            return None
        k = self.eligible
        return f"n/a: {k} group{'' if k == 1 else 's'} of at least {self.min_images} images"

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "variant": self.variant, "min_images": self.min_images,
                "worst_group": self.worst, "worst_group_not_available": self.not_available,
                "mean_group_accuracy": self.mean, "overall": self.overall, "groups": self.groups}

    def table(self) -> List[dict]:
        """One row per group: n, accuracy and its interval."""
        return [dict(g) for g in self.groups]

    def text(self) -> str:
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        eligible = self.eligible
        kind = "(object class, background class)" if self.groups and "background" in self.groups[0] else "groups"
        lines = [f"groups of {of} on {self.variant}: {kind}, 95% Wilson intervals; "
                 f"{plural(len(self.groups), 'group')}, {eligible} with >= {self.min_images} images", self.headline()]
        w = max([24, *(len(g["group"]) for g in self.groups)])
        lines.append(f"{'group':<{w}} {'n':>5} {'accuracy':>8} {'95% CI':>15}")
        lines += [f"{g['group']:<{w}} {g['n']:>5} {_pct(g['acc']):>7}% [{_pct(g['lo']):>5},{_pct(g['hi']):>5}]"
                  for g in sorted(self.groups, key=lambda g: (g["acc"], g["group"]))]
        return "\n".join(lines)

    def headline(self) -> str:
        """One line: the worst group with its interval, the mean over groups and the overall accuracy."""
        if self.worst is not None:
            w = self.worst
            text = (f"worst group: {w['group']}, {_pct(w['acc'])}% [{_pct(w['lo'])}, {_pct(w['hi'])}] "
                    f"of {plural(w['n'], 'image')}")
        else:
            text = (f"worst group: {self.not_available} (it needs {MIN_GROUPS}; `bgbench analyze groups "
                    f"--min-images` lowers the bar)")
        if self.mean is not None:
            text += (f"; mean over {plural(len(self.groups), 'group')} {_pct(self.mean)}%; overall "
                     f"{_pct(self.overall['acc'])}% of {self.overall['n']}")
        return text

    def metric_rows(self) -> List[tuple]:
        """The stored metrics: the worst group's accuracy with its interval, the mean over groups."""
        rows = []
        if self.worst is not None:
            w = self.worst
            rows.append(("worst_group_accuracy", self.variant, w["acc"], w["lo"], w["hi"], w["n"]))
        elif self.groups:  # measured, but too few groups qualify: no value; n = the groups that did
            rows.append(("worst_group_accuracy", self.variant, None, None, None, self.eligible))
        if self.mean is not None:
            rows.append(("mean_group_accuracy", self.variant, self.mean, None, None, len(self.groups)))
        return rows


def _pct(v: float) -> str:
    return f"{100 * v:.1f}"


Group = Union[str, Tuple[str, str]]


def group_accuracy(correct: Sequence[bool], groups: Sequence[Group], variant: str = "",
                   min_images: int = MIN_IMAGES) -> GroupAccuracy:
    """Per-group accuracy of the images' `correct` flags, image i in group `groups[i]` (a name, or a
    (class, background) pair named '<class> on <background>'); the worst group among those with at
    least `min_images` images (ties: the first by name), and the unweighted mean over all groups."""
    correct = np.asarray(correct, dtype=bool)
    by_group: Dict[Group, List[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(tuple(g) if isinstance(g, (tuple, list)) else str(g), []).append(i)
    rows = []
    for group, idx in sorted(by_group.items()):
        k, n = int(correct[idx].sum()), len(idx)
        lo, hi = wilson_interval(k, n)
        row = {"group": group if isinstance(group, str) else f"{group[0]} on {group[1]}"}
        if not isinstance(group, str):
            row.update({"class": group[0], "background": group[1]})
        rows.append({**row, "n": n, "correct": k, "acc": k / n, "lo": lo, "hi": hi})
    eligible = [r for r in rows if r["n"] >= min_images]
    worst = min(eligible, key=lambda r: (r["acc"], r["group"])) if len(eligible) >= MIN_GROUPS else None
    k, n = int(correct.sum()), len(correct)
    lo, hi = wilson_interval(k, n) if n else (float("nan"), float("nan"))
    overall = {"acc": k / n if n else float("nan"), "lo": lo, "hi": hi, "n": n}
    mean = float(np.mean([r["acc"] for r in rows])) if rows else None
    return GroupAccuracy(variant, rows, worst, mean, overall, min_images)


#: IN-9 variants whose images' groups (class, background class) the eval reports, when the data records them.
GROUPED_VARIANTS = ("original", "mixed_rand")


def group_results(layout: "Layout", predictions: Dict[str, "Predictions"]) -> Dict[str, GroupAccuracy]:
    """Accuracy per group of every variant whose images' groups the data names (`image_groups`: a
    group file, or the manifest's background classes; the one function here that reads files)."""
    from ...data.manifest import image_groups
    out = {}
    for v, p in predictions.items():
        if layout.kind == IN9 and v not in GROUPED_VARIANTS:
            continue
        groups = image_groups(layout, v)
        if groups is not None:
            out[v] = group_accuracy(p.correct, [groups[i] for i in p.image_ids], variant=v)
    return out
