"""Eval's columns of the shortcut table as a derived model's paired change from its base, read from
the two runs' stored predictions: an accuracy per image, correct(derived) - correct(base); the
BG-Gap per foreground (correct on mixed_same minus on mixed_rand), derived minus base, as `bgbench
compare` computes its BG-Gap difference (both paired over the ids the store lists in order)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from ...errors import BgbenchError
from ...evaluation.metrics import paired, paired_difference


def shortcut_change(store, column, base_run: int, derived_run: int, seed: int) -> Optional[dict]:
    """The change of one of eval's shortcut columns from `base_run` to `derived_run` (None: a variant
    either run lacks); runs on other data or other images are a BgbenchError."""
    base, derived = store.run_row(base_run), store.run_row(derived_run)
    if base["data_fingerprint"] != derived["data_fingerprint"]:
        raise BgbenchError(f"runs {base_run} and {derived_run} are on different data")
    variants = ("mixed_same", "mixed_rand") if column.metric == "bg_gap" else (column.variant,)
    outcomes = {}
    for v in variants:
        b, d = _outcomes(store, base_run, v), _outcomes(store, derived_run, v)
        if not b or not d:
            return None
        if [(i, label) for i, (label, _) in b.items()] != [(i, label) for i, (label, _) in d.items()]:
            raise BgbenchError(f"runs {base_run} and {derived_run} are not on the same images ({v})")
        outcomes[v] = (b, d)
    if column.metric == "bg_gap":
        (same_base, same_derived), (rand_base, rand_derived) = outcomes["mixed_same"], outcomes["mixed_rand"]
        derived_gap, base_gap = _gap(same_derived, rand_derived), _gap(same_base, rand_base)
        return paired_difference(derived_gap, base_gap, seed=seed).as_dict() if derived_gap.size else None
    b, d = outcomes[column.variant]
    return paired_difference(np.array([ok for _, ok in d.values()], float),
                             np.array([ok for _, ok in b.values()], float), seed=seed).as_dict()


def _outcomes(store, run_id: int, variant: str) -> Dict[str, Tuple[int, bool]]:
    """image id -> (label, correct) of a run's stored predictions of `variant`, in the store's order."""
    return {r["image_id"]: (int(r["label"]), r["pred"] == r["label"]) for r in store.predictions(run_id, variant)}


def _gap(same: Dict[str, Tuple[int, bool]], rand: Dict[str, Tuple[int, bool]]) -> np.ndarray:
    """Per foreground in both variants: correct on mixed_same minus correct on mixed_rand."""
    s, r = paired({i: ok for i, (_, ok) in same.items()}, {i: ok for i, (_, ok) in rand.items()})
    return s.astype(float) - r.astype(float)
