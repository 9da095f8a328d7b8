"""What the report shows of the saliency measure: RIVAL10's alignment by predicted class, and the
most and least aligned Grad-CAM maps (one overlay per example, written by the run)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional


from ..examples import class_namer, per_class
from ..registry import SectionContext, SectionSubject, stored_section


@stored_section
def saliency_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    from .metrics import METRICS
    outputs = json.loads(run["outputs"] or "{}")
    overlay = None
    source = Path(outputs["overlays"]) if outputs.get("overlays") else None
    if source is not None and source.is_file() and not outputs.get("examples"):
        # a run without per-example overlays: its grid, copied so the report stands alone (runs
        # with examples are shown by the saliency gallery, one image per example)
        overlay = ctx.href(ctx.plots.picture(source, ctx.figure_path(subject, "saliency-overlays")))
    # a measure no image has a value of is left out; precision, the headline, is always shown
    # (with no value when every map was flat: 0/0 on every image)
    measured = [m for m in METRICS if m == "precision" or summary.image_mean[m]["n"] > 0]
    return {"run_id": run["id"], "layer": outputs.get("layer"), "metrics": measured,
            "headline": summary.headline, "image_mean": summary.image_mean, "per_class": summary.per_class,
            "flat": summary.flat, "images": summary.images, "overlay": overlay}


def saliency_gallery(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    from ..common.names import prediction_namer
    run = subject.latest(MEASURE.kind)
    if run is None:
        return None
    examples = json.loads(run["outputs"] or "{}").get("examples") or []
    if not examples:
        return None
    config = json.loads(run["config"])
    dataset_labels = config.get("label_space", "dataset") == "dataset"
    pred_name = prediction_namer(config.get("classes") or [], dataset_labels)
    name, files = class_namer(config.get("classes") or []), ctx.files(run)
    g = ctx.gallery("Grad-CAM", folder=files.folder("original"))
    k = max(1, per_class(len(config.get("classes") or [])) // 2)  # of each rank: the most, the least aligned
    shown: dict = {}
    for ex in examples:
        seen = shown.setdefault((ex["pred"], ex["rank"]), [])
        if len(seen) >= k:
            continue
        seen.append(ex)
        overlay = Path(ex["overlay"])
        ok = ex["pred"] == ex["label"] if dataset_labels else None
        shots = [g.shot(files.image("original", ex["image_id"]), "image"),
                 g.shot(overlay if overlay.is_file() else None, "Grad-CAM", pred_name(ex["pred"]), ok)]
        score = "all-zero map" if ex["precision"] is None else f"precision {ex['precision']:.2f}"
        g.add(pred_name(ex["pred"]), ex["image_id"], name(ex["label"]), f"{ex['rank']}: {score}", shots)
    return {"run_id": run["id"], "gallery": g.to_dict(), "layer": config.get("layer"), "per_rank": k,
            "examples": len(examples)}
