"""ImageNet-X's column of the shortcut table as a derived model's paired change from its base:
both background error ratios on the same resampled images."""
from __future__ import annotations

from typing import Optional


def shortcut_change(store, column, base_run: int, derived_run: int, seed: int) -> Optional[dict]:
    """The background error ratio of `derived_run` minus `base_run`'s (`ImageNetXMeasure.background_change`)."""
    from . import MEASURE
    return MEASURE.background_change(store, base_run, derived_run, seed=seed)
