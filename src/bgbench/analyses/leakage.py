"""Leakage (paper §5): background-only accuracy above chance, from a per-image table or a stored eval run.

A model trained on MIXED-RAND or ONLY-FG should be at chance (1/C) on the background-only
variants; the excess measures what the box's shape alone gives away.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from ..errors import BgbenchError
from ..evaluation.metrics import Estimate, accuracy
from ..store import Store
from .tables import RunTable, run_row, stored_table

BACKGROUND_ONLY = ("only_bg_b", "only_bg_t", "no_fg")


@dataclass
class LeakageResult:
    run_id: Optional[int]  # None for a table that was never stored
    chance: float
    accuracy: Dict[str, Estimate]
    trained_on: Optional[str] = None

    def excess(self) -> Dict[str, Estimate]:
        """Accuracy minus chance, with the Wilson interval shifted the same way."""
        c = self.chance
        return {v: Estimate(e.value - c, e.lo - c, e.hi - c, e.n) for v, e in self.accuracy.items()}

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "chance": self.chance, "trained_on": self.trained_on,
                "accuracy": {v: e.as_dict() for v, e in self.accuracy.items()},
                "above_chance": {v: e.as_dict() for v, e in self.excess().items()}}

    def table(self) -> str:
        on = f", trained on {self.trained_on}" if self.trained_on else ""
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        lines = [f"leakage of {of}{on}: background-only accuracy above chance "
                 f"({100 * self.chance:.1f}%)", f"{'variant':<12} {'acc':>7} {'above chance':>13}  {'95% CI':>17} {'n':>6}"]
        for v, e in self.excess().items():
            a = self.accuracy[v]
            lines.append(f"{v:<12} {100 * a.value:6.1f}% {100 * e.value:+12.1f}%  "
                         f"[{100 * e.lo:+5.1f}%, {100 * e.hi:+5.1f}%] {e.n:>6}")
        return "\n".join(lines)


def leakage(store: Store, run_id: int, variants: Sequence[str] = BACKGROUND_ONLY,
            mapping: Optional[str] = None) -> LeakageResult:
    """Background-only accuracy minus 1/C for each of `variants` stored in the run."""
    row = run_row(store, run_id)
    return leakage_of(stored_table(store, run_id, mapping=mapping, variants=variants), variants,
                      trained_on=trained_on(store, row))


def leakage_of(table: RunTable, variants: Sequence[str] = BACKGROUND_ONLY,
               trained_on: Optional[str] = None) -> LeakageResult:
    """Background-only accuracy minus 1/C for each of `variants` in a per-image table.

    `trained_on`: the variant the model was trained on, when known (shown beside the numbers).
    """
    chosen = [v for v in variants if v in table.variants]
    if not chosen:
        raise BgbenchError(f"{table.name} has none of the background-only variants {', '.join(variants)}")
    p = table.variants
    classes = table.classes or sorted({int(x) for v in p.values() for x in v.labels})
    return LeakageResult(table.run_id, 1.0 / len(classes), {v: accuracy(p[v].correct) for v in chosen}, trained_on)


def trained_on(store: Store, row) -> Optional[str]:
    """The variant the evaluated model was trained on, from the train run with its checkpoint."""
    sha = row["checkpoint_sha256"]
    if not sha:
        return None
    train = store.train_run_for_checkpoint(sha)
    return json.loads(train["config"]).get("variant") if train else None
