"""The one donor choice for mixed_same / mixed_rand / mixed_next, shared by `synth` and `build`.

A mixed image gets the only_bg_t of a donor: a random image of the class its rule asks for
(same, a uniformly random class, or the next class), never the image itself where another one
exists. A composite needs the donor's size, so only images of the same size qualify; when the
donor class has none of that size, any other image of that size is taken and the reason is
recorded. One generator seeded by (seed, 99) walks the images in their sorted order and the
mixed variants in registry order, so the choice depends on the seed and the list only: never on
workers or shards.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .registry import get_variant, list_variants

# why a mixed image's background is not of the class its rule asks for
NO_CLASS_IMAGE = "no_image_of_class"
NO_CLASS_IMAGE_OF_SIZE = "no_image_of_class_and_size"


class Candidate(NamedTuple):
    """An image that can receive and give backgrounds: its position, label and (height, width)."""

    index: int
    label: int
    size: Tuple[int, int]


@dataclass(frozen=True)
class Donor:
    """The image whose only_bg_t a mixed variant gets, and why it breaks the rule ('' if not)."""

    index: int
    fallback: str = ""


def assign_donors(images: Sequence[Candidate], num_classes: int, seed: int,
                  mixed: Optional[Sequence[str]] = None) -> Dict[int, Dict[str, Donor]]:
    """For each image and mixed variant (of `mixed`, every registered one by default), its donor;
    an image no donor can serve gets no entry.

    Such an image is the only one of its size while its rule asks for another image.
    """
    rng = np.random.default_rng([seed, 99])
    by_class: Dict[Tuple[int, Tuple[int, int]], List[int]] = {}
    by_size: Dict[Tuple[int, int], List[int]] = {}
    for p in images:
        by_class.setdefault((p.label, p.size), []).append(p.index)
        by_size.setdefault(p.size, []).append(p.index)
    labels = {p.label for p in images}
    mixed = [n for n in list_variants() if get_variant(n).donor is not None] if mixed is None else list(mixed)
    out: Dict[int, Dict[str, Donor]] = {}
    for p in images:
        chosen: Dict[str, Donor] = {}
        for name in mixed:
            dc = get_variant(name).donor_class(p.label, num_classes, rng)
            members = by_class.get((dc, p.size), [])
            pool, fallback = [j for j in members if j != p.index] or members, ""
            if not pool:
                pool = [j for j in by_size[p.size] if j != p.index]
                fallback = NO_CLASS_IMAGE_OF_SIZE if dc in labels else NO_CLASS_IMAGE
            if pool:
                chosen[name] = Donor(pool[int(rng.integers(len(pool)))], fallback)
        if len(chosen) == len(mixed):
            out[p.index] = chosen
    return out
