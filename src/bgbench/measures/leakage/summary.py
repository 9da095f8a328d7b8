"""Leakage (paper §5): background-only accuracy above chance, from a per-image table or a stored eval run.

A model trained on MIXED-RAND or ONLY-FG should be at chance (1/C) on ONLY-BG-B and ONLY-BG-T,
the two variants the paper names: their excess over chance measures what the box's shape alone
gives away. NO-FG is not one of them: it keeps the object's silhouette, so its excess over
chance is shape signal, reported apart under its own name ("silhouette signal").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from ...errors import BgbenchError
from ...evaluation.metrics import Estimate, accuracy
from ...store import Store
from ...probing.tables import RunTable, run_config, stored_table
from ...result import Result

BACKGROUND_ONLY = ("only_bg_b", "only_bg_t")
SILHOUETTE = "no_fg"
SILHOUETTE_NAME = f"silhouette signal ({SILHOUETTE})"


def above_chance(e: Estimate, chance: float) -> Estimate:
    """Accuracy minus chance, with the Wilson interval shifted the same way."""
    return Estimate(e.value - chance, e.lo - chance, e.hi - chance, e.n)


@dataclass
class LeakageResult(Result):
    """Box leakage on the background-only variants, and the silhouette signal of NO-FG apart."""

    run_id: Optional[int]  # None for a table that was never stored
    chance: float
    accuracy: Dict[str, Estimate]  # only_bg_b / only_bg_t, those the run stored
    silhouette: Optional[Estimate] = None  # accuracy on no_fg, when stored
    trained_on: Optional[str] = None

    def excess(self) -> Dict[str, Estimate]:
        return {v: above_chance(e, self.chance) for v, e in self.accuracy.items()}

    def to_dict(self) -> dict:
        silhouette = None if self.silhouette is None else {
            "name": SILHOUETTE_NAME, "variant": SILHOUETTE, "accuracy": self.silhouette.as_dict(),
            "above_chance": above_chance(self.silhouette, self.chance).as_dict()}
        return {"run_id": self.run_id, "chance": self.chance, "trained_on": self.trained_on,
                "accuracy": {v: e.as_dict() for v, e in self.accuracy.items()},
                "above_chance": {v: e.as_dict() for v, e in self.excess().items()},
                "silhouette_signal": silhouette}

    def table(self) -> list:
        """One row per variant (no_fg last, where stored): accuracy and accuracy above chance."""
        measured = {**self.accuracy, **({SILHOUETTE: self.silhouette} if self.silhouette is not None else {})}
        return [{"variant": v, "acc": e.value, "acc_lo": e.lo, "acc_hi": e.hi, "n": e.n,
                 "above_chance": above_chance(e, self.chance).value} for v, e in measured.items()]

    def text(self) -> str:
        on = f", trained on {self.trained_on}" if self.trained_on else ""
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        head = f"{'variant':<12} {'acc':>7} {'above chance':>13}  {'95% CI':>17} {'n':>6}"
        lines = [f"leakage of {of}{on}: background-only accuracy above chance "
                 f"({100 * self.chance:.1f}%)", head]
        lines += [_line(v, self.accuracy[v], e) for v, e in self.excess().items()]
        if self.silhouette is not None:
            lines += ["", f"{SILHOUETTE_NAME}: the object's outline is kept, so this is shape signal, not leakage",
                      head, _line(SILHOUETTE, self.silhouette, above_chance(self.silhouette, self.chance))]
        return "\n".join(lines)


def _line(variant: str, acc: Estimate, ex: Estimate) -> str:
    return (f"{variant:<12} {100 * acc.value:6.1f}% {100 * ex.value:+12.1f}%  "
            f"[{100 * ex.lo:+5.1f}%, {100 * ex.hi:+5.1f}%] {ex.n:>6}")


def leakage(store: Store, run_id: int, mapping: Optional[str] = None) -> LeakageResult:
    """Accuracy minus 1/C on ONLY-BG-B and ONLY-BG-T (and, apart, NO-FG) of a stored eval run."""
    row = store.run_row(run_id)
    return leakage_of(stored_table(store, run_id, mapping=mapping, variants=[*BACKGROUND_ONLY, SILHOUETTE]),
                      trained_on=trained_on(store, row))


def leakage_of(table: RunTable, trained_on: Optional[str] = None) -> LeakageResult:
    """Accuracy minus 1/C on ONLY-BG-B and ONLY-BG-T of a per-image table (and NO-FG apart).

    `trained_on`: the variant the model was trained on, when known (shown beside the numbers).
    """
    chosen = [v for v in BACKGROUND_ONLY if v in table.variants]
    if not chosen:
        raise BgbenchError(f"{table.name} has no predictions for {' or '.join(BACKGROUND_ONLY)}, the "
                           f"background-only variants leakage is measured on "
                           f"(it holds: {', '.join(table.variants) or 'none'})")
    p = table.variants
    classes = table.classes or sorted({int(x) for v in p.values() for x in v.labels})
    silhouette = accuracy(p[SILHOUETTE].correct) if SILHOUETTE in p else None
    return LeakageResult(table.run_id, 1.0 / len(classes), {v: accuracy(p[v].correct) for v in chosen},
                         silhouette, trained_on)


def trained_on(store: Store, row) -> Optional[str]:
    """The variant the evaluated model was trained on, from the train run with its checkpoint."""
    sha = row["checkpoint_sha256"]
    train = store.train_run_for_checkpoint(sha) if sha else None
    return run_config(train).get("variant") if train is not None else None
