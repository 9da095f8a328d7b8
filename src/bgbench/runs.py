"""Where a `--data` path meets a measure: the one caller that reads it into a `data.layout.Layout`
as the measure declares (`RunningMeasure.reads`: its variants, its split) before the measure runs,
so that no measure imports the readers of every dataset layout (`data.resolve`). The API, and
through it the CLI and studies, run every model measure through `run_measure`; `run_eval` and
`run_challenge` are its two measures with arguments of their own; `stored_report` reads a stored
eval run back over its data's layout.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Optional

from .data.layout import Layout
from .data.resolve import resolve_layout
from .measures.registry import get_measure

if TYPE_CHECKING:
    from .measures.challenge.config import ChallengeConfig
    from .measures.challenge.result import ChallengeReport
    from .measures.eval.config import EvalConfig
    from .measures.eval.results import EvalReport
    from .measures.eval.runner import Renderers
    from .models.spec import BgModel
    from .store import Store


def run_measure(measure, model: "BgModel", data: "str | Path | Layout", cfg, **given):
    """`measure.compute` of `model` on `data` under `cfg`: a path is read as the measure asks
    (`measure.reads(cfg, data, given)`), a `Layout` taken as it is. `given`: progress, out_dir and
    what the measure takes beside its config. The result on rank 0, None on other torchrun ranks."""
    layout = data if isinstance(data, Layout) else resolve_layout(data, **measure.reads(cfg, data, given))
    return measure.compute(model, layout, cfg, **given)


def run_eval(model: "BgModel", data: "str | Path | Layout", cfg: "EvalConfig", progress: bool = True,
             renderers: Optional["Renderers"] = None) -> Optional["EvalReport"]:
    """Per-variant predictions of `model` on `data`, their accuracies and BG-Gap, and provenance
    (the eval measure, `measures.eval`). Under torchrun each rank predicts whole batches of every
    variant and rank 0 joins them: its report is the one-process report; the other ranks return
    None. `renderers`: variants computed from `original` where the data lacks their folder."""
    return run_measure(get_measure("eval"), model, data, cfg, progress=progress, renderers=renderers or {})


def run_challenge(model: "BgModel", data: "str | Path | Layout", store: "Store", cfg: "ChallengeConfig",
                  out_dir: "Optional[str | Path]" = None, progress: bool = True,
                  figures: Optional[Callable[["ChallengeReport", Path], Dict[str, str]]] = None
                  ) -> Optional["ChallengeReport"]:
    """Run (or resume, or extend) the Backgrounds Challenge (`measures.challenge`); the report on
    rank 0, None on other ranks. Verdict rows go to `store` as they come; the run stays open until
    `recording.record(report, store)`. `figures(report, out_dir) -> {name: path}` draws the --full
    figures (`drawing.figures.challenge_figures`), a layer above the measures."""
    return run_measure(get_measure("challenge"), model, data, cfg, progress=progress, out_dir=out_dir, store=store,
                       figures=figures)


def stored_report(store, run_id: int) -> "EvalReport":
    """The report of a finished eval run, rebuilt from its stored predictions over its data's layout
    (what `bgbench eval` shows again instead of predicting anew: the same accuracies, BG-Gap and
    groups, since every metric is a pure function of the per-image table and the run's bootstrap seed)."""
    from .measures.eval.runner import eval_report
    from .evaluation.predict import Predictions
    from .probing.tables import stored_predictions
    from .models.labels import run_model_label
    run = store.get_run(run_id)
    config = json.loads(run["config"] or "{}")
    predictions = {v: Predictions(list(s.image_ids), s.labels, s.preds, s.conf)
                   for v, s in stored_predictions(store, run_id, variants=config.get("variants")).items()}
    layout = resolve_layout(run["data_root"], [v for v in predictions if v not in config.get("computed_variants", [])]
                            or None, split=config.get("split"))
    report = eval_report(run["model"], layout, predictions, int(config.get("seed", 0)))
    report.model_label, report.run_id = run_model_label(run), run_id
    report.precision = str(config.get("precision") or "fp32")
    return report
