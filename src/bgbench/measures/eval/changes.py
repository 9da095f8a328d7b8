"""Eval's columns of the shortcut table as a derived model's paired change from its base: BG-Gap
per foreground, as `bgbench compare` computes its difference; an accuracy per image,
correct(derived) - correct(base)."""
from __future__ import annotations

from typing import Optional

from ...errors import BgbenchError
from ...evaluation.metrics import paired_difference


def shortcut_change(store, column, base_run: int, derived_run: int, seed: int) -> Optional[dict]:
    """The change of one of eval's shortcut columns from `base_run` to `derived_run` (None: a variant
    either run lacks); runs on other images are a BgbenchError."""
    from ...comparing import compare_runs
    from ...probing.tables import stored_table
    if column.metric == "bg_gap":
        comp = compare_runs(store, derived_run, base_run, seed=seed)
        return None if comp.bg_gap_diff is None else comp.bg_gap_diff.as_dict()
    tb, td = stored_table(store, base_run), stored_table(store, derived_run)
    if column.variant not in tb.variants or column.variant not in td.variants:
        return None
    a, b = tb.variants[column.variant], td.variants[column.variant]
    if list(a.image_ids) != list(b.image_ids):
        raise BgbenchError(f"runs {base_run} and {derived_run} are not on the same images ({column.variant})")
    return paired_difference(b.correct.astype(float), a.correct.astype(float), seed=seed).as_dict()
