"""The challenge's column of the shortcut table as a derived model's paired change from its base:
per foreground, held(derived) - held(base), where both runs judged the same foregrounds."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...evaluation.metrics import paired_difference


def shortcut_change(store, column, base_run: int, derived_run: int, seed: int) -> Optional[dict]:
    """The change of challenge accuracy from `base_run` to `derived_run`; None for sampled runs of
    other foregrounds (no pairing)."""
    held_b, held_d = ({r["image_id"]: not r["fooled"] for r in store.challenge_results(run)}
                      for run in (base_run, derived_run))
    if not held_b or set(held_b) != set(held_d):
        return None
    ids = sorted(held_b)
    derived, base = (np.array([held[i] for i in ids], dtype=float) for held in (held_d, held_b))
    return paired_difference(derived, base, seed=seed).as_dict()
