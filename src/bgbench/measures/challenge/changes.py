"""The challenge's column of the shortcut table as a derived model's paired change from its base:
per foreground, held(derived) - held(base), where both runs judged the same foregrounds."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...evaluation.metrics import paired_difference


def shortcut_change(store, column, base_run: int, derived_run: int, seed: int) -> Optional[dict]:
    """The change of challenge accuracy from `base_run` to `derived_run`; None for sampled runs of
    other foregrounds (no pairing)."""
    fb, fd = store.challenge_results(base_run), store.challenge_results(derived_run)
    held_b = {r["image_id"]: not r["fooled"] for r in fb}
    held_d = {r["image_id"]: not r["fooled"] for r in fd}
    if not held_b or set(held_b) != set(held_d):
        return None
    ids = sorted(held_b)
    base, derived = np.array([held_b[i] for i in ids]), np.array([held_d[i] for i in ids])
    return paired_difference(derived.astype(float), base.astype(float), seed=seed).as_dict()
