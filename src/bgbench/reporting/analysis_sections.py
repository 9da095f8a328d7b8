"""Report sections for the analyses and probes: prediction categories, box size, noise
sensitivity (RFS) and saliency alignment. Each reads what was recorded and returns None when a
model has nothing of that kind, so the page shows only what was measured."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

from ..errors import BgbenchError
from . import figures
from .context import ReportContext, Subject
from .sections import register_section

#: Training variants whose models should be at chance without the object (paper §5).
LEAKAGE_TRAINING = ("mixed_rand", "only_fg")


@register_section("categories", "Prediction categories (paper Table 3)")
def categories_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.categories.summary import CATEGORIES, prediction_categories
    run = subject.latest("eval")
    if run is None:
        return None
    try:
        result = prediction_categories(ctx.store, run["id"])
    except BgbenchError:  # the eval run lacks original, mixed_rand or only_bg_t
        return None
    path = figures.category_bars(ctx.figure_path(subject, "categories"), result.overall)
    return {"run_id": run["id"], "n": result.n, "categories": list(CATEGORIES), "overall": result.overall,
            "per_class": result.per_class, "figure": ctx.href(path)}


@register_section("leakage", "Box leakage and silhouette signal (paper §5)")
def leakage_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    """Shown for models trained on MIXED-RAND or ONLY-FG only: for them background-only accuracy
    should be chance, so its excess is leakage; for any other model it is background signal."""
    from ..measures.leakage.summary import SILHOUETTE, SILHOUETTE_NAME, above_chance, leakage
    run = subject.latest("eval")
    if run is None:
        return None
    try:
        result = leakage(ctx.store, run["id"])
    except BgbenchError:  # the eval run has neither only_bg_b nor only_bg_t
        return None
    if result.trained_on not in LEAKAGE_TRAINING:
        return None
    rows = [{"variant": v, "acc": result.accuracy[v], "excess": e} for v, e in result.excess().items()]
    silhouette = None
    if result.silhouette is not None:
        silhouette = {"variant": SILHOUETTE, "name": SILHOUETTE_NAME, "acc": result.silhouette,
                      "excess": above_chance(result.silhouette, result.chance)}
    return {"run_id": run["id"], "chance": result.chance, "trained_on": result.trained_on, "rows": rows,
            "silhouette": silhouette}


@register_section("boxsize", "Accuracy by box size (paper Fig. 14)")
def boxsize_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.boxsize.summary import box_size_curve
    run = subject.latest("eval")
    if run is None:
        return None
    variants = [v for v in ("only_bg_t", "only_bg_b", "original") if v in (json.loads(run["config"]).get("variants")
                                                                          or [])]
    if not variants:
        return None
    try:  # boxes come from the dataset's records (or ONLY-BG-B): without the data, no curve
        result = box_size_curve(ctx.store, run["id"], variants=variants, bins=5)
    except BgbenchError:
        return None
    curves = {v: [{**p, "mid": 50 * (p["lo"] + p["hi"])} for p in points] for v, points in result.curves.items()}
    path = figures.binned_curves(ctx.figure_path(subject, "boxsize"), curves,
                                 xlabel="box area / image area (%, bin middle)")
    first = next(iter(result.curves.values()))
    same_bins = all([(p["lo"], p["hi"]) for p in pts] == [(p["lo"], p["hi"]) for p in first]
                    for pts in result.curves.values())
    rows = None
    if same_bins:  # one row per bin, one column per variant: the curves side by side
        rows = [{"lo": b["lo"], "hi": b["hi"], "n": b["n"], "acc": {v: pts[k] for v, pts in result.curves.items()}}
                for k, b in enumerate(first)]
    return {"run_id": run["id"], "box_source": result.box_source, "curves": result.curves, "rows": rows,
            "variants": list(result.curves), "figure": ctx.href(path)}


@register_section("noise", "Noise sensitivity (RIVAL10)")
def noise_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.ablation.summary import region_label
    from ..measures.noise.probe import noise_summary
    run = subject.latest("probe_noise")
    if run is None:
        return None
    summary = noise_summary(ctx.store, run["id"])
    curves = {f"noise on the {region_label(region)}": points for region, points in summary.curves.items()}
    kind = summary.grid["kind"]
    path = figures.binned_curves(ctx.figure_path(subject, "noise"), curves, x_key="level",
                                 xlabel="noise level (σ)" if kind != "l2" else "noise L2 norm")
    rows = [{"level": summary.label(fg["level"]), "fg": fg, "bg": bg, "rfs": summary.rfs.get(fg["level"])}
            for fg, bg in zip(summary.curves["fg"], summary.curves["bg"])]
    lo, hi = summary.rfs_overall_interval
    return {"run_id": run["id"], "rows": rows, "grid": summary.grid_label, "images": summary.images,
            "classes": summary.classes, "bootstrap": summary.bootstrap,
            "rfs_overall": {"value": summary.rfs_overall, "lo": lo, "hi": hi}, "figure": ctx.href(path)}


@register_section("saliency", "Saliency alignment (Grad-CAM)")
def saliency_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.saliency.probe import saliency_summary
    from ..measures.saliency.metrics import METRICS
    run = subject.latest("probe_saliency")
    if run is None:
        return None
    summary = saliency_summary(ctx.store, run["id"])
    outputs = json.loads(run["outputs"] or "{}")
    overlay = None
    source = Path(outputs["overlays"]) if outputs.get("overlays") else None
    if source is not None and source.is_file() and not outputs.get("examples"):
        # a run from before the per-example overlays: its grid, copied so the report stands alone
        # (newer runs are shown by the saliency gallery, one image per example)
        target = ctx.figure_path(subject, "saliency-overlays")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        overlay = ctx.href(target)
    measured = [m for m in METRICS if summary.image_mean[m]["n"] > 0]  # runs stored before v3 lack some
    return {"run_id": run["id"], "layer": outputs.get("layer"), "metrics": measured,
            "headline": summary.headline, "image_mean": summary.image_mean, "per_class": summary.per_class,
            "flat": summary.flat, "images": summary.images, "overlay": overlay}


@register_section("edits", "Attribute edits (ImageNet-E)")
def edits_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.edit_drops.summary import edit_drops, split_level
    from ..edits.registry import ATTRIBUTES
    run = subject.latest("eval")
    if run is None:
        return None
    variants = json.loads(run["config"]).get("variants") or []
    if "original" not in variants or not any(split_level(v)[0] in ATTRIBUTES for v in variants):
        return None  # not an eval of an edit dataset
    drops = edit_drops(ctx.store, [run["id"]])
    levels = [lv.to_dict() for lv in drops.levels]
    path = figures.drop_bars(ctx.figure_path(subject, "edits"), [lv["variant"] for lv in levels],
                             [lv["drop"] for lv in levels], [lv["lo"] for lv in levels], [lv["hi"] for lv in levels])
    return {"run_id": run["id"], "original": drops.original.as_dict(), "levels": levels, "figure": ctx.href(path)}
