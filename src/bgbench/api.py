"""The Python API: the same operations the CLI runs, callable from a notebook."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import torch

from .classes import Mapping
from .data.layout import Layout, discover
from .evaluate.predict import check_compatible, mask_checker, predict_items
from .evaluate.report import EvalReport
from .models.registry import create_model
from .models.spec import BgModel
from .store import Store
from .variants import IN9_VARIANTS

load_model = create_model


def evaluate(model: BgModel | str, data: str | Path | Layout, variants: Optional[Sequence[str]] = None,
             mapping: Mapping | str = Mapping.ARGMAX, batch_size: int = 64, device: str = "cpu",
             store: Optional[Store] = None, progress: bool = True, seed: int = 0,
             checkpoint: Optional[str] = None) -> EvalReport:
    """Evaluate a model on IN-9-layout variants; store per-image predictions if `store` is given.

    Args:
        model: a `BgModel` or a model string (with `checkpoint`).
        data: dataset root (or a discovered `Layout`).
        variants: which variant folders to use; default: the 8 IN-9 variants present.
        mapping: decision rule for 1000-class models ('argmax' is the paper's).
    """
    if isinstance(model, str):
        model = create_model(model, checkpoint=checkpoint)
    if isinstance(data, Layout):
        layout = data
    elif variants:
        layout = discover(data, variants=list(variants))
    else:
        found = discover(data)
        present = [v for v in IN9_VARIANTS if v in found.variants] or list(found.variants)
        layout = discover(data, variants=present)
    variants = list(variants or layout.variants)
    check_compatible(model, layout.classes)
    model = model.to(device).eval()
    Mapping(mapping)
    predictions = {}
    for v in variants:
        predictions[v] = predict_items(model, layout.items(v), batch_size=batch_size, device=device,
                                       mapping=mapping, progress=progress, desc=v,
                                       checker=mask_checker(layout) if v == "original" else None)
    report = EvalReport.from_predictions(model.spec.name, str(layout.root), predictions, seed=seed)
    if store is not None:
        spec = model.spec.to_dict()
        config = {"variants": variants, "mapping": Mapping(mapping).value, "batch_size": batch_size,
                  "device": device, "split": layout.split, "torch": torch.__version__}
        run_id = store.start_run("eval", model.spec.name, spec, config, data_root=str(layout.root),
                                 data_fingerprint=layout.fingerprint(), seed=seed)
        for v, p in predictions.items():
            store.add_predictions(run_id, v, p.image_ids, p.labels, p.preds, p.conf)
            e = report.accuracy[v]
            store.add_metric(run_id, "accuracy", e.value, e.lo, e.hi, e.n, variant=v)
        if report.bg_gap is not None:
            g = report.bg_gap
            store.add_metric(run_id, "bg_gap", g.value, g.lo, g.hi, g.n)
        store.finish_run(run_id)
        report.run_id = run_id
    return report
