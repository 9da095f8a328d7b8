"""Evaluating a model on a dataset's variants: the per-image table and the report built from it.

The eval measure's steps in the template of every model run (`running.RunningMeasure`): its image
sets (`eval_sets`: the variants) and its run (`eval_run`: each variant through the template's
feed); I/O lives here; the metrics are pure functions of the predictions (`results.EvalReport`).
Variants whose folder a dataset lacks but that can be computed from `original`, `fg_mask` and the
boxes (bg_blurred on the public release) come from `renderers`, passed in by the caller because
computing them needs a higher layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch

from ... import protocols
from ...console import status
from ...data.decode_ahead import decode_ahead
from ...data.layout import Item, Layout
from ...data.resolve import resolve_layout
from ...distributed import Ranks
from ...models.spec import BgModel
from ...provenance import model_label
from .config import EvalConfig
from ..common.groups import group_results
from ..running import RunContext, predicted
from ...evaluation.predict import Predictions, mask_checker
from .results import EvalReport
from .tencrop import CROP as TEN_CROP_SIZE, RESIZE as TEN_CROP_RESIZE, ten_crop_logits

#: variant -> (layout -> (item of `original` -> HxWx3 uint8 image of the variant)).
Renderers = Dict[str, Callable[[Layout], Callable[[Item], object]]]


def run_eval(model: BgModel, data: str | Path | Layout, cfg: EvalConfig, progress: bool = True,
             renderers: Optional[Renderers] = None) -> Optional[EvalReport]:
    """Per-variant predictions of `model` on `data`, their accuracies and BG-Gap, and provenance
    (the eval measure's run, through the template of every model run: `running.RunningMeasure`).

    Under torchrun each rank predicts whole batches of every variant (block b of `batch_size`
    images goes to rank b mod K) and rank 0 joins them: its report is the one-process report; the
    other ranks return None.
    """
    from ..registry import get_measure  # the registered eval (its package declares it, and imports this module)
    return get_measure("eval").compute(model, data, cfg, progress=progress, renderers=renderers or {})


@dataclass
class Variants:
    """Eval's image sets: the variants it predicts, in order, those of them computed on the fly
    from `original` (and the renderers that compute them)."""

    names: List[str]
    on_the_fly: set
    renderers: Renderers


def eval_sets(data, cfg: EvalConfig, renderers: Renderers):
    """(the layout, its `Variants`): the requested variants (every variant of the data by default),
    those the data lacks but a renderer computes read from `original`."""
    on_the_fly = computed_variants(data, cfg.variants, renderers)
    on_disk = [v for v in cfg.variants or () if v not in on_the_fly]
    if on_the_fly and "original" not in on_disk:
        on_disk.append("original")
    layout = resolve_layout(data, on_disk or None, split=cfg.split)
    return layout, Variants(list(cfg.variants or layout.variants), on_the_fly, renderers)


def eval_run(run: RunContext):
    """Every variant's predictions (the template's feed), and on rank 0 (the report, its config)."""
    cfg: EvalConfig = run.cfg
    model, layout, sets = run.model, run.layout, run.sets
    _warn_ten_crop_size(model, cfg, run.ranks)
    predictions, fed = {}, {"images": 0, "from_cache": 0}
    on_disk = [v for v in sets.names if v not in sets.on_the_fly]
    ahead = decode_ahead([layout.items(v) for v in on_disk], run.device)  # the next variant decodes meanwhile
    try:
        for v in sets.names:
            render = sets.renderers[v](layout) if v in sets.on_the_fly else None
            items = layout.items("original" if v in sets.on_the_fly else v)
            pixels = ahead.pixels(on_disk.index(v)) if ahead is not None and render is None else None
            predictions[v], pixels = predicted(run, items, desc=v, render=render, pixels=pixels,
                                               forward=ten_crop_logits if cfg.ten_crop else None,
                                               checker=mask_checker(layout) if v == "original" else None)
            fed["images"] += len(items)
            fed["from_cache"] += pixels.from_cache
    finally:
        if ahead is not None:
            ahead.close()
    if not run.ranks.main:
        return None
    if fed["from_cache"]:  # what the run did: the images it did not decode (the pixel cache's `bgbench cache`)
        status(f"read {fed['from_cache']:,} of {fed['images']:,} images from the pixel cache "
               f"(decoded once before; --no-cache decodes them anew)")
    report = EvalReport.from_predictions(model.spec.name, str(layout.root), predictions, seed=cfg.seed)
    report.groups = group_results(layout, predictions)
    report.model_label, report.precision = model_label(model.spec.name, model.spec.to_dict()), str(cfg.precision)
    if getattr(layout, "fallback", ""):
        status(layout.fallback)
        report.split_read = {"split": layout.split, "why": layout.fallback}
    after = {"torch": torch.__version__, "computed_variants": sorted(sets.on_the_fly),
             "protocol_settings": protocols.settings_of(cfg.protocol),
             "requested": {"variants": cfg.variants, "split": cfg.split},  # before the data resolved them
             "pixels": fed}  # how many images came decoded from the pixel cache (runtime, not identity)
    config = run.measure.run_config(cfg, layout, run.ranks, own={"variants": sets.names}, after=after)
    return report, config


def stored_report(store, run_id: int) -> EvalReport:
    """The report of a finished eval run, rebuilt from its stored predictions (what `bgbench eval`
    shows again instead of predicting anew: the same accuracies, BG-Gap and groups, since every
    metric is a pure function of the per-image table and the run's bootstrap seed)."""
    import json
    from ...probing.tables import stored_predictions
    from ...provenance import run_model_label
    run = store.get_run(run_id)
    config = json.loads(run["config"] or "{}")
    predictions = {v: Predictions(list(s.image_ids), s.labels, s.preds, s.conf)
                   for v, s in stored_predictions(store, run_id, variants=config.get("variants")).items()}
    layout = resolve_layout(run["data_root"], [v for v in predictions if v not in config.get("computed_variants", [])]
                            or None, split=config.get("split"))
    report = EvalReport.from_predictions(run["model"], str(layout.root), predictions, seed=int(config.get("seed", 0)))
    report.groups = group_results(layout, predictions)
    report.model_label, report.run_id = run_model_label(run), run_id
    report.precision = str(config.get("precision") or "fp32")
    return report



def computed_variants(data, variants: Optional[List[str]], renderers: Renderers) -> set:
    """Requested variants that have a renderer and whose folder the dataset lacks."""
    if not variants or isinstance(data, Layout):
        return set()
    root = Path(data).expanduser()
    return {v for v in variants if v in renderers and not (root / v).is_dir()}


def _warn_ten_crop_size(model: BgModel, cfg: EvalConfig, ranks: Ranks) -> None:
    trained = tuple(model.spec.input_size or ())[-1:]
    if cfg.ten_crop and trained and trained[0] < TEN_CROP_SIZE // 2 and ranks.main:
        status(f"warning: --ten-crop feeds {TEN_CROP_SIZE}-px crops of images resized to 256, but "
               f"{model.spec.name} expects {trained[0]}-px inputs; objects will look "
               f"{TEN_CROP_RESIZE / trained[0]:.1f}x larger than in training")
