"""Evaluation results: per-variant accuracy with intervals and the BG-Gap, as a table or JSON."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...result import Result
from ..common.groups import GroupAccuracy
from .counter_gap import COMMON, COUNTER, CounterGap, counter_gap
from ...evaluation.metrics import Estimate, accuracy, bg_gap, REPLICATES, interval
from ...evaluation.predict import Predictions
from .waterbirds import WaterbirdsScore


#: Groups listed one per line in the table (Waterbirds' 4); more (IN-9's 81): `bgbench analyze groups`.
GROUPS_LISTED = 12


@dataclass
class EvalReport(Result):
    """Metrics of one model on one dataset, computed from per-image predictions."""

    model: str
    data: str
    predictions: Dict[str, Predictions]
    accuracy: Dict[str, Estimate] = field(default_factory=dict)
    bg_gap: Optional[Estimate] = None
    run_id: Optional[int] = None
    provenance: Any = None  # provenance.Provenance, for recording
    model_label: Optional[str] = None  # models.labels.model_label: the model with its weights, for display
    #: variant -> accuracy per group, where the data names each image's group (a group dataset;
    #: IN-9's MIXED-RAND, or ORIGINAL of `synth --correlation`, from the manifest)
    groups: Dict[str, GroupAccuracy] = field(default_factory=dict)
    precision: str = "fp32"  # the arithmetic of the forwards: only fp32 is exact
    #: {split, why} where the data chose the split itself because its default was absent (a
    #: Spawrious tree without m2m_hard's folders); None otherwise, and absent from `to_dict`
    split_read: Optional[Dict[str, str]] = None
    #: on a Waterbirds split, wilds' average and worst-group accuracy (`waterbirds`); None otherwise
    waterbirds: Optional[WaterbirdsScore] = None
    #: CounterAnimal's common − counter accuracy, overall and per class, where the data has both groups
    counter_gap: Optional[CounterGap] = None

    @classmethod
    def from_predictions(cls, model: str, data: str, predictions: Dict[str, Predictions],
                         n_boot: int = REPLICATES, seed: int = 0) -> "EvalReport":
        acc = {v: accuracy(p.correct) for v, p in predictions.items()}
        gap = None
        if "mixed_same" in predictions and "mixed_rand" in predictions:
            gap = bg_gap(predictions["mixed_same"].correct_by_id(), predictions["mixed_rand"].correct_by_id(),
                         n_boot=n_boot, seed=seed)
        counter = None
        if COMMON in predictions and COUNTER in predictions:
            counter = counter_gap(predictions[COMMON], predictions[COUNTER], n_boot=n_boot, seed=seed)
        return cls(model=model, data=data, predictions=predictions, accuracy=acc, bg_gap=gap, counter_gap=counter)

    def metric_rows(self) -> List[tuple]:
        rows = [("accuracy", v, e.value, e.lo, e.hi, e.n) for v, e in self.accuracy.items()]
        if self.bg_gap is not None:
            g = self.bg_gap
            rows.append(("bg_gap", "", g.value, g.lo, g.hi, g.n))
        if self.counter_gap is not None:
            rows += self.counter_gap.metric_rows()
        for result in self.groups.values():
            rows += result.metric_rows()
        if self.waterbirds is not None:
            rows += self.waterbirds.metric_rows()
        return rows

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {"predictions": [row for v, p in self.predictions.items() for row in p.rows(v)]}

    def to_dict(self) -> dict:
        return {"model": self.model, "model_label": self.model_label or self.model, "data": self.data,
                "run_id": self.run_id, "precision": self.precision,
                **({"split_read": self.split_read} if self.split_read else {}),
                "accuracy": {v: e.as_dict() for v, e in self.accuracy.items()},
                "bg_gap": self.bg_gap.as_dict() if self.bg_gap else None,
                **({"counter_gap": self.counter_gap.to_dict()} if self.counter_gap else {}),
                **({"groups": {v: g.to_dict() for v, g in self.groups.items()}} if self.groups else {}),
                **({"waterbirds": self.waterbirds.to_dict()} if self.waterbirds is not None else {})}

    def text(self) -> str:
        w = max([12, *(len(v) for v in self.accuracy)])  # edit levels are longer than IN-9 names
        lines = [f"model: {self.model_label or self.model}", f"data:  {self.data}",
                 *([f"precision: {self.precision} (not exact fp32: the numbers may differ from an fp32 run's)"]
                   if self.precision != "fp32" else []),
                 f"{'variant':<{w}} {'acc':>7}  {'95% CI':>17} {'n':>6}",
                 *(f"{v:<{w}} {100 * e.value:6.1f}%  [{100 * e.lo:5.1f}%, {100 * e.hi:5.1f}%] {e.n:>6}"
                   for v, e in self.accuracy.items())]
        if self.bg_gap is not None:
            g = self.bg_gap
            ci = interval(g.lo, g.hi, g.n, lambda v: f"{100 * v:5.1f}%")
            lines.append(f"{'BG-Gap':<{w}} {100 * g.value:6.1f}%  {ci:>16} {g.n:>6}"
                         "  (mixed_same - mixed_rand, paired bootstrap)")
        if self.counter_gap is not None:
            lines += self.counter_gap.lines()
        for v, result in self.groups.items():
            lines.append(f"{v}: {result.headline()}")
            if len(result.groups) <= GROUPS_LISTED:
                gw = max([w + 12, *(len(str(g["group"])) for g in result.groups)])  # long group names stay aligned
                lines += [f"  {g['group']:<{gw}} {100 * g['acc']:6.1f}%  [{100 * g['lo']:5.1f}%, "
                          f"{100 * g['hi']:5.1f}%] {g['n']:>6}" for g in result.groups]
        if self.waterbirds is not None:
            lines.append(self.waterbirds.text())
        return "\n".join(lines)
