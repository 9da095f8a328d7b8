"""The challenge's numbers from its stored verdicts (and, with --full, its prediction matrix).

Pure: writes neither the store nor figures (those are drawn by `drawing.figures`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ...models.labels import model_label
from ...data.layout import Layout
from .config import ChallengeConfig
from .matrix import attack_success_rates, class_fool_rates, top_backgrounds, verdicts_from_matrix
from .result import ChallengeReport
from .sample import SamplePlan, done_prefix, wilson_halfwidth
from ...evaluation.metrics import accuracy


@dataclass
class ChallengeData:
    """What a challenge reads: the foregrounds (original x mask) and every only_bg_t background."""

    layout: Layout
    pairs: list  # (original Item, mask path) per foreground
    bg_items: list
    backgrounds: Any = None  # NHWC uint8 tensor of the backgrounds, once decoded

    def __post_init__(self):
        self.fg_ids: List[str] = [it.image_id for it, _ in self.pairs]
        self.fg_labels = np.array([it.label for it, _ in self.pairs], dtype=np.int64)
        self.bg_labels = np.array([it.label for it in self.bg_items], dtype=np.int64)
        self.position = {i: k for k, i in enumerate(self.fg_ids)}
        self.bg_index = {it.image_id: j for j, it in enumerate(self.bg_items)}


def summarize(verdict_rows: Sequence, data: ChallengeData, run_id: int, spec: Dict[str, Any], matrix=None,
              plan: Optional[SamplePlan] = None, cfg: Optional[ChallengeConfig] = None) -> ChallengeReport:
    """The report of run `run_id` from its verdict rows (`Store.challenge_results`); `spec` is the
    model's resolved spec (`ModelSpec.to_dict()`)."""
    rows = {r["image_id"]: r for r in verdict_rows}
    chosen, estimate = _evaluated(rows, data, plan, cfg)
    ids = [data.fg_ids[i] for i in chosen]
    labels = data.fg_labels[chosen]
    missing = [i for i in ids if i not in rows]
    if missing:
        raise RuntimeError(f"challenge run {run_id} is missing {len(missing)} foregrounds after all ranks finished")
    fooled = np.array([bool(rows[i]["fooled"]) for i in ids])
    clean_ok = np.array([rows[i]["clean_pred"] == rows[i]["label"] for i in ids])
    sample = {"seed": cfg.seed, "n": len(ids), "population": len(data.pairs), "requested": cfg.sample,
              "halfwidth_target": cfg.halfwidth, "halfwidth": wilson_halfwidth(int((~fooled).sum()), len(fooled))
              } if cfg is not None and cfg.sampled else None
    full, asr_rows, fool_rates = (None, [], None) if matrix is None else _matrix_analyses(
        np.asarray(matrix), run_id, data, labels, fooled)
    return ChallengeReport(model=spec["name"], model_label=model_label(spec["name"], spec),
                           data=str(data.layout.root), run_id=run_id,
                           challenge_accuracy=accuracy(~fooled), clean_accuracy=accuracy(clean_ok),
                           fooled=int(fooled.sum()), total=len(fooled),
                           per_class=_per_class(data.layout.classes, labels, clean_ok, fooled, fool_rates),
                           full=full, estimate=estimate, sample=sample, asr_rows=asr_rows)


def _evaluated(rows: Dict[str, Any], data: ChallengeData, plan: Optional[SamplePlan],
               cfg: Optional[ChallengeConfig]) -> tuple:
    """Positions of the foregrounds the numbers cover, and whether they are an estimate: a sampled
    run that stopped early covers the longest done prefix of its seeded order."""
    n_sample = done_prefix(plan.order, data.fg_ids, rows) if plan is not None else len(data.fg_ids)
    if not (n_sample < len(data.fg_ids) and cfg is not None and cfg.sampled):  # not an estimate
        return np.arange(len(data.fg_ids)), False
    if n_sample == 0:
        raise RuntimeError("the challenge run has no verdicts in its sample")
    return np.array(sorted(plan.order[:n_sample])), True


def _matrix_analyses(m: np.ndarray, run_id: int, data: ChallengeData, labels: np.ndarray, fooled: np.ndarray):
    """ASR per background, class fool rates and the top-5 backgrounds of each class (--full)."""
    if m.shape[0] != len(labels) or not (verdicts_from_matrix(m, labels) == fooled).all():
        raise RuntimeError(f"challenge run {run_id}: its stored prediction matrix does not give its stored verdicts")
    asr = attack_success_rates(m, labels, data.bg_labels)
    fool_rates = class_fool_rates(m, labels, data.bg_labels, len(data.layout.classes))
    items = data.bg_items
    asr_rows = [(it.image_id, int(c), float(a)) for it, c, a in zip(items, data.bg_labels, asr)]
    return {"top5": {data.layout.classes[c]: [
        {"bg": items[j].image_id, "asr": float(asr[j]), "path": str(items[j].path)} for j in js]
        for c, js in sorted(top_backgrounds(asr, data.bg_labels, k=5).items())}}, asr_rows, fool_rates


def _per_class(classes: Sequence[str], labels: np.ndarray, clean_ok: np.ndarray, fooled: np.ndarray,
               fool_rates: Optional[np.ndarray]) -> List[dict]:
    out = []
    for c, name in enumerate(classes):
        sel = labels == c
        row = {"class": name, "n": int(sel.sum()), "clean": float(clean_ok[sel].mean()) if sel.any() else float("nan"),
               "challenge": float((~fooled[sel]).mean()) if sel.any() else float("nan")}
        if fool_rates is not None:
            row["class_fool_rate"] = float(fool_rates[c])
        out.append(row)
    return out
