"""Leakage (paper §5): background-only accuracy above chance, from a stored eval run.

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
from .tables import run_classes, run_row, stored_predictions

BACKGROUND_ONLY = ("only_bg_b", "only_bg_t", "no_fg")


@dataclass
class LeakageResult:
    run_id: int
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
        lines = [f"leakage of run {self.run_id}{on}: background-only accuracy above chance "
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
    present = store.run_variants(run_id)
    chosen = [v for v in variants if v in present]
    if not chosen:
        raise BgbenchError(f"run {run_id} has none of the background-only variants {', '.join(variants)}")
    p = stored_predictions(store, run_id, mapping=mapping, variants=chosen)
    classes = run_classes(row) or sorted({int(x) for v in p.values() for x in v.labels})
    return LeakageResult(int(run_id), 1.0 / len(classes), {v: accuracy(p[v].correct) for v in chosen},
                         trained_on(store, row))


def trained_on(store: Store, row) -> Optional[str]:
    """The variant the evaluated model was trained on, from the train run with its checkpoint."""
    sha = row["checkpoint_sha256"]
    if not sha:
        return None
    train = store.train_run_for_checkpoint(sha)
    return json.loads(train["config"]).get("variant") if train else None
