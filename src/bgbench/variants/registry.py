"""Variants registered by name; the CLI's choices come from here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import numpy as np

from . import functions as F

VariantFn = Callable[..., np.ndarray]


#: rule -> the donor's class, f(label, num_classes, rng)
DONOR_RULES = {"same": lambda label, num_classes, rng: label,
               "rand": lambda label, num_classes, rng: int(rng.integers(num_classes)),
               "next": lambda label, num_classes, rng: (label + 1) % num_classes}


@dataclass(frozen=True)
class Variant:
    """A named variant: its pure render function and, for mixed ones, how the donor class is drawn.

    Attributes:
        name: folder name in the IN-9 layout.
        render: f(image, mask, box, background=None) -> uint8 image.
        donor: None, or 'same' | 'rand' | 'next': the background's class relative to the label.
    """

    name: str
    render: VariantFn
    donor: Optional[str] = None

    def donor_class(self, label: int, num_classes: int, rng: np.random.Generator) -> int:
        if self.donor is None:
            raise ValueError(f"variant {self.name} has no donor background")
        return DONOR_RULES[self.donor](label, num_classes, rng)


_VARIANTS: Dict[str, Variant] = {}


def register_variant(variant: Variant) -> Variant:
    if variant.name in _VARIANTS:
        raise ValueError(f"variant {variant.name} is already registered")
    _VARIANTS[variant.name] = variant
    return variant


def get_variant(name: str) -> Variant:
    try:
        return _VARIANTS[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(_VARIANTS)}") from None


def list_variants() -> List[str]:
    """Registered variant names: the release's 8 (`IN9_VARIANTS`) in IN-9 order, then bg_blurred."""
    return list(_VARIANTS)


for _v in (
    Variant("original", F.original),
    Variant("only_bg_b", F.only_bg_b),
    Variant("only_bg_t", F.only_bg_t),
    Variant("no_fg", F.no_fg),
    Variant("only_fg", F.only_fg),
    Variant("mixed_same", F.mixed, donor="same"),
    Variant("mixed_rand", F.mixed, donor="rand"),
    Variant("mixed_next", F.mixed, donor="next"),
    Variant("bg_blurred", F.bg_blurred),  # an extra, beside the release's folders
):
    register_variant(_v)
