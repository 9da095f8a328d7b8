"""Which images the report's galleries show: real failures, ranked by a score, never the first n.

A measure's section picks its own (pure functions of its stored per-image tables, beside the
section that shows them); each returns `Pick`s: an image, its class, the score that chose it, and
what a gallery shows beside it (`detail`). Every gallery takes the best `per_class` picks of each
class (`top_per_class`), so that a class filter always finds its own examples and one class's
failures never crowd out the others'. The scores (higher is shown first unless said otherwise):
- prediction categories (`categories.section.category_examples`): the confidence of the ONLY-BG-T
  prediction. In BG Required the background alone gets the class right, in BG Fools it names the
  same wrong class as the full image; the more confident the background alone, the more the image
  shows background reliance;
- challenge (`challenge.section.most_fooled`, --full): the share of all backgrounds that fool the
  foreground;
- noise (`noise.section.noise_flips`): the lowest level at which noise flips the prediction
  (lowest first);
- edits (`edits.section.edit_flips`): the confidence of the wrong prediction after the edit.

How many a gallery shows of each class (`per_class`), how it names a predicted class
(`class_namer`) and the clean predictions a gallery judges against (`clean_predictions`) are here;
the report hands each section its drawing (`SectionContext`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence


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
    return [p for label in sorted(by_class)
            for p in sorted(by_class[label], key=lambda p: (sign * p.score, p.image_id))[:per_class]]


def clean_predictions(ctx: SectionContext, subject: SectionSubject) -> Optional[Dict[str, tuple]]:
    """image id -> (label, prediction) on ORIGINAL from the subject's newest eval run, if any."""
    run = subject.latest("eval")
    if run is None or "original" not in ctx.store.run_variants(run["id"]):
        return None
    return {r["image_id"]: (int(r["label"]), int(r["pred"])) for r in ctx.store.predictions(run["id"], "original")}
