"""`ChallengeReport`: what a challenge run found, as rows for the store, JSON and a table."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...result import Result
from ...evaluation.metrics import Estimate, percent


@dataclass
class ChallengeReport(Result):
    model: str
    data: str
    run_id: int
    challenge_accuracy: Estimate
    clean_accuracy: Estimate
    fooled: int
    total: int
    per_class: List[dict]
    pairs: int = 0
    seconds: float = 0.0
    full: Optional[dict] = None
    files: Dict[str, str] = field(default_factory=dict)
    estimate: bool = False  # True when only a sample of the foregrounds was evaluated
    sample: Optional[dict] = None  # seed, n, population, requested, halfwidth_target, halfwidth
    precision: Optional[dict] = None  # bf16-verified: VerifiedStats.as_dict(), over every invocation of the run
    numerics: Optional[dict] = None  # the precision, and whether fp32 forwards ran strict (no TF32)
    asr_rows: List[tuple] = field(default_factory=list, repr=False)
    provenance: Any = None  # the open run's provenance.Provenance
    store_path: Optional[str] = None  # the store holding the verdict rows, where `record` finishes the run
    model_label: Optional[str] = None  # models.labels.model_label: the model with its weights, for display

    @property
    def run_status(self) -> str:
        """'sampled' for an estimate (the run can be extended), else 'done'."""
        return "sampled" if self.estimate else "done"

    def metric_rows(self) -> List[tuple]:
        c, k = self.challenge_accuracy, self.clean_accuracy
        rows = [("challenge_accuracy", "", c.value, c.lo, c.hi, c.n),
                ("clean_accuracy", "", k.value, k.lo, k.hi, k.n),
                ("fooled", "", float(self.fooled), None, None, self.total),
                ("challenge_pairs", "", self.pairs, None, None, None)]
        for row in self.per_class:
            rows.append(("challenge_accuracy_class", row["class"], row["challenge"], None, None, row["n"]))
            if "class_fool_rate" in row:
                rows.append(("class_fool_rate", row["class"], row["class_fool_rate"], None, None, None))
        if self.sample is not None:
            rows.append(("challenge_sample_n", "", self.sample["n"], None, None, self.sample["population"]))
        if self.precision is not None:  # what a bf16-verified run checked
            from .verified import report_rows
            rows += report_rows(self.precision)
        return rows

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {"challenge_bg": self.asr_rows}

    def outputs(self) -> dict:
        return {"files": self.files, "seconds": self.seconds, "estimate": self.estimate, "sample": self.sample,
                "numerics": self.numerics}

    def to_dict(self) -> dict:
        return {"model": self.model, "model_label": self.model_label or self.model, "data": self.data,
                "run_id": self.run_id, "challenge_accuracy": self.challenge_accuracy.as_dict(),
                "clean_accuracy": self.clean_accuracy.as_dict(),
                "fooled": self.fooled, "total": self.total, "per_class": self.per_class, "pairs": self.pairs,
                "seconds": self.seconds, "full": self.full, "files": self.files, "estimate": self.estimate,
                "sample": self.sample, "precision": self.precision, "numerics": self.numerics}

    def text(self) -> str:
        c, k = self.challenge_accuracy, self.clean_accuracy
        precision = (self.numerics or {}).get("precision", "fp32")
        lines = [f"model: {self.model_label or self.model}", f"data:  {self.data}",
                 *([f"precision: {precision} (not exact fp32{'' if precision == 'bf16-verified' else ': verdicts may differ from an fp32 run'})"]
                   if precision != "fp32" else []),
                 f"challenge accuracy {100 * c.value:5.1f}%  [{100 * c.lo:.1f}%, {100 * c.hi:.1f}%]  "
                 f"({self.total - self.fooled}/{self.total} foregrounds never fooled)",
                 f"clean accuracy     {100 * k.value:5.1f}%  [{100 * k.lo:.1f}%, {100 * k.hi:.1f}%]  (original)",
                 f"fooled foregrounds {self.fooled}/{self.total}",
                 *self._sample_lines(), *self._precision_lines(),
                 "", f"{'class':<24} {'n':>5} {'clean':>7} {'challenge':>10}" +
                 (f" {'fool rate':>10}" if self.full else "")]
        for row in self.per_class:
            line = f"{row['class']:<24} {row['n']:>5} {percent(row['clean'], 6)} {percent(row['challenge'], 9)}"
            if self.full:
                line += f" {percent(row['class_fool_rate'], 9)}"
            lines.append(line)
        if self.files:
            lines += ["", *(f"{k}: {v}" for k, v in self.files.items())]
        return "\n".join(lines)

    def _sample_lines(self) -> List[str]:
        if not self.estimate or not self.sample:
            return []
        s, exact = self.sample, (self.numerics or {}).get("precision", "fp32") == "fp32"
        return [f"ESTIMATE from a seeded sample of {s['n']} of {s['population']} foregrounds (seed {s['seed']}, "
                f"stratified by class): 95% Wilson interval half-width {100 * s['halfwidth']:.1f} points; "
                f"each verdict {'is exact' if exact else 'tried every background'}. Rerun with --seed {s['seed']} and without --sample to extend it to the "
                "full set."]

    def _precision_lines(self) -> List[str]:
        if not self.precision:
            return []
        from .verified import report_lines
        return report_lines(self.precision)
