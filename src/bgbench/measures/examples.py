"""Which images the report's galleries show: real failures, ranked by a score, never the first n.

Pure functions of stored per-image tables (no files, no model). Each returns `Pick`s: an image,
its class, the score that chose it, and what a gallery shows beside it (`detail`). Every
gallery takes the best `per_class` picks of each class, so that a class filter always finds its
own examples and one class's failures never crowd out the others'.

Scores (higher is shown first unless said otherwise):
- prediction categories (`categories.section.category_examples`, beside the categories it reads):
  the confidence of the ONLY-BG-T prediction. In BG Required the background alone gets the class
  right, in BG Fools it names the same wrong class as the full image; the more confident the
  background alone, the more the image shows background reliance;
- challenge (--full): the share of all backgrounds that fool the foreground;
- noise: the lowest level at which noise flips the prediction (lowest first);
- edits: the confidence of the wrong prediction after the edit.

How many a gallery shows of each class (`per_class`) and how it names a predicted class
(`class_namer`) are here too; the report hands each section its drawing (`SectionContext`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from ..classes import NO_CLASS
from .registry import SectionContext, SectionSubject

#: About how many examples a gallery shows (per category or level), spread evenly over the classes.
EXAMPLES = 9


def per_class(classes: int) -> int:
    """Examples per class of a gallery over `classes` classes: EXAMPLES shared out, at least one
    (IN-9's nine classes: one each; Waterbirds' two: five each)."""
    return max(1, -(-EXAMPLES // max(1, int(classes))))


def class_namer(classes: Sequence[str]) -> Callable[[int], str]:
    """Names for predicted indices: a dataset class, 'none of its classes' (-1, or 255 in a --full
    matrix: a 1000-class model's prediction that its class map, IN-9's or a custom one, sends to no
    class of the dataset), else 'class <i>'."""
    def name(i: int) -> str:
        i = int(i)
        if 0 <= i < len(classes):
            return classes[i]
        return "none of its classes" if i in (NO_CLASS, 255) else f"class {i}"
    return name


@dataclass(frozen=True)
class Pick:
    image_id: str
    label: int
    score: float
    detail: dict = field(default_factory=dict, compare=False)


def top_per_class(picks: Iterable[Pick], per_class: int, lowest_first: bool = False) -> List[Pick]:
    """The `per_class` best picks of each class (by label, ascending): highest score first (lowest
    with `lowest_first`), ties by image id."""
    by_class: Dict[int, List[Pick]] = {}
    for p in picks:
        by_class.setdefault(int(p.label), []).append(p)
    sign = 1 if lowest_first else -1
    out: List[Pick] = []
    for label in sorted(by_class):
        out += sorted(by_class[label], key=lambda p: (sign * p.score, p.image_id))[:per_class]
    return out


def most_fooled(matrix: np.ndarray, fg_ids: Sequence[str], fg_labels: np.ndarray, asr: np.ndarray,
                per_class: int) -> List[Pick]:
    """Foregrounds fooled by the most backgrounds (a --full prediction matrix: foregrounds x
    backgrounds), each with one background that fools it: of those, the one with the highest
    attack success rate (ties: the first). Foregrounds never fooled are not shown."""
    matrix = np.asarray(matrix)
    wrong = matrix != np.asarray(fg_labels)[:, None].astype(matrix.dtype)
    counts = wrong.sum(axis=1)
    picks = []
    for i in np.nonzero(counts)[0]:
        fooling = np.nonzero(wrong[i])[0]
        j = int(fooling[np.argmax(np.asarray(asr)[fooling])])  # argmax keeps the first of ties
        picks.append(Pick(fg_ids[i], int(fg_labels[i]), float(counts[i]) / matrix.shape[1],
                          {"row": int(i), "fooled_by": int(counts[i]), "backgrounds": int(matrix.shape[1]),
                           "bg": j, "pred": int(matrix[i, j])}))
    return top_per_class(picks, per_class)


def noise_flips(rows: Sequence[Any], per_class: int, clean_correct: Optional[Mapping[str, bool]] = None
                ) -> List[Pick]:
    """Images whose prediction noise flips at the lowest level.

    rows: the noise probe's (image_id, label, region, level, trial, correct, pred). An image flips in a region at a
    level when most of its trials there (more than half) are wrong; its score is the lowest such level
    over both regions (ties between regions: the larger wrong share, then fg). With
    `clean_correct` (image id -> right on the clean image, from an eval run) only images that
    were right without noise count; without it, every image that noise makes wrong counts.
    detail: the region and level of the flip, its wrong share, and the first wrong trial there.
    """
    wrong: Dict[tuple, Dict[int, bool]] = {}
    labels: Dict[str, int] = {}
    for r in rows:
        labels[r.image_id] = int(r.label)
        wrong.setdefault((r.image_id, r.region, float(r.level)), {})[int(r.trial)] = not r.correct
    flips: Dict[str, tuple] = {}
    for (image_id, region, level), trials in wrong.items():
        share = sum(trials.values()) / len(trials)
        if share <= 0.5 or (clean_correct is not None and not clean_correct.get(image_id, False)):
            continue
        key = (level, -share, ("fg", "bg").index(region) if region in ("fg", "bg") else 2)
        if image_id not in flips or key < flips[image_id][0]:
            first = min(t for t, w in trials.items() if w)
            flips[image_id] = (key, {"region": region, "level": level, "wrong": share, "trial": first})
    picks = [Pick(i, labels[i], key[0], detail) for i, (key, detail) in flips.items()]
    return top_per_class(picks, per_class, lowest_first=True)


def edit_flips(original: Mapping[str, tuple], edited: Mapping[str, tuple], per_class: int) -> List[Pick]:
    """Images right before the edit and wrong after it, scored by the confidence of the wrong
    prediction. original, edited: image id -> (label, pred, confidence)."""
    picks = []
    for image_id, (label, pred, conf) in edited.items():
        before = original.get(image_id)
        if before is None or before[1] != before[0] or pred == label:
            continue
        picks.append(Pick(image_id, int(label), float(conf),
                          {"before": int(before[1]), "before_conf": float(before[2]), "after": int(pred)}))
    return top_per_class(picks, per_class)


def clean_predictions(ctx: SectionContext, subject: SectionSubject) -> Optional[Dict[str, tuple]]:
    """image id -> (label, prediction) on ORIGINAL from the subject's newest eval run, if any."""
    run = subject.latest("eval")
    if run is None or "original" not in ctx.store.run_variants(run["id"]):
        return None
    return {r["image_id"]: (int(r["label"]), int(r["pred"])) for r in ctx.store.predictions(run["id"], "original")}
