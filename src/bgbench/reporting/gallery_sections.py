"""Galleries of real failures, each placed right after the section with its numbers: the images
behind the prediction categories, the noise probe, the saliency probe and the edits.

Each chooses its images by a score (`analyses.examples`), reads them from the run's recorded
dataset and shows thumbnails written once per report (`thumbs`). A model with nothing of that
kind recorded gets no gallery; a dataset that has moved gives a note, not broken images.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Optional

from ..errors import BgbenchError
from .context import ReportContext, Subject
from .dataset_files import DatasetFiles
from .gallery import PER_CLASS, Gallery, class_namer
from .sections import register_section

#: How the galleries name the three inputs of the prediction categories.
CATEGORY_INPUTS = {"original": "ORIGINAL", "mixed_rand": "MIXED-RAND", "only_bg_t": "ONLY-BG-T"}
CATEGORY_GALLERIES = ("BG Required", "BG Fools")


def run_files(run) -> DatasetFiles:
    """The dataset files of a run: its recorded root and split."""
    return DatasetFiles(run["data_root"], json.loads(run["config"] or "{}").get("split", "val"))


@register_section("categories_gallery", "Images behind the prediction categories", after="categories")
def categories_gallery(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.categories.summary import NEEDED, judge_images
    from .examples import category_examples
    from ..probing.tables import stored_table
    run = subject.latest("eval")
    if run is None:
        return None
    try:
        judged = judge_images(stored_table(ctx.store, run["id"], variants=NEEDED))
    except BgbenchError:  # the run lacks one of the three variants
        return None
    files, name = run_files(run), class_namer(subject.classes)
    galleries = []
    for category in CATEGORY_GALLERIES:
        g = Gallery(category, ctx.thumbs, folder=files.folder("original"))
        for p in category_examples(judged, category, PER_CLASS):
            preds = p.detail["preds"]
            shots = [g.shot_of_file(files.image(v, p.image_id), title, name(preds[v]), preds[v] == p.label)
                     for v, title in CATEGORY_INPUTS.items()]
            g.add(name(p.label), p.image_id, name(p.label), f"ONLY-BG-T confidence {p.score:.2f}", shots)
        galleries.append(g.to_dict())
    return {"run_id": run["id"], "galleries": galleries, "per_class": PER_CLASS}


def clean_predictions(ctx: ReportContext, subject: Subject) -> Optional[Dict[str, tuple]]:
    """image id -> (label, prediction) on ORIGINAL from the subject's newest eval run, if any."""
    from ..probing.tables import stored_predictions
    run = subject.latest("eval")
    if run is None or "original" not in ctx.store.run_variants(run["id"]):
        return None
    v = stored_predictions(ctx.store, run["id"], variants=["original"])["original"]
    return {i: (int(y), int(p)) for i, y, p in zip(v.image_ids, v.labels, v.preds)}


@register_section("noise_gallery", "Images that noise flips first", after="noise")
def noise_gallery(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from .examples import noise_flips
    from ..measures.noise.probe import DRAWS
    run = subject.latest("probe_noise")
    if run is None:
        return None
    config = json.loads(run["config"])
    if config.get("draws") != DRAWS:  # drawn from one generator per run: its copies cannot be redrawn
        return {"run_id": run["id"], "gallery": None}
    columns = ("image_id", "label", "region", "level", "trial", "correct", "pred")
    # the object and the background (a --region attributes run's 'attr:<name>' rows are in the noise
    # section's curves; the gallery redraws copies from the object mask only)
    rows = [tuple(r[c] for c in columns) for r in ctx.store.probe_rows("probe_noise", run["id"])
            if r["region"] in ("fg", "bg")]
    clean = clean_predictions(ctx, subject)
    picks = noise_flips(rows, PER_CLASS, {i: y == p for i, (y, p) in clean.items()} if clean else None)
    preds = {(r[0], r[2], float(r[3]), int(r[4])): r[6] for r in rows}
    tally: Dict[tuple, list] = {}  # (image, region, level) -> [wrong trials, trials]
    for r in rows:
        t = tally.setdefault((r[0], r[2], float(r[3])), [0, 0])
        t[0], t[1] = t[0] + (not r[5]), t[1] + 1
    files, name = run_files(run), class_namer(subject.classes)
    g = Gallery("Noise", ctx.thumbs, folder=files.folder("original"))
    for p in picks:
        _noise_item(g, files, name, p, config, preds, tally, clean)
    return {"run_id": run["id"], "gallery": g.to_dict(), "per_class": PER_CLASS, "judged_clean": clean is not None}


def _noise_item(g: Gallery, files: DatasetFiles, name, p, config: dict, preds: dict, tally: dict, clean) -> None:
    """One image: its clean self, then one line per region with its noisy copy at every level
    (the trial that flipped it), each with the prediction the probe stored for that copy and how
    many of the image's trials there were wrong."""
    import torch

    from ..measures.noise.engine import REGIONS, noisy_copy
    from ..measures.noise.levels import level_label
    image, mask = files.pixels("original", p.image_id), files.mask_pixels(p.image_id)
    if image is None or mask is None:
        g.missing += 1
        return
    x = torch.from_numpy(image.copy()).permute(2, 0, 1).float().div_(255)  # as the probe's batches make it
    m = torch.from_numpy(mask.copy())[None].float()
    trial, kind = p.detail["trial"], config.get("kind", "sigma")
    label = lambda level: level_label(level, kind, config.get("grid") or "custom")  # noqa: E731
    clean_pred = clean.get(p.image_id) if clean else None
    lines = [[g.shot_of_file(files.image("original", p.image_id), "no noise",
                             name(clean_pred[1]) if clean_pred else "", clean_pred[0] == clean_pred[1]
                             if clean_pred else None)]]
    for region in REGIONS:
        line = []
        for level in sorted(float(v) for v in config["levels"]):
            noisy = noisy_copy(x, m, p.image_id, int(config.get("seed", 0)), region, level, trial,
                               int(config["trials"]), kind)
            rgb = noisy.permute(1, 2, 0).mul(255).round().to(torch.uint8).numpy()
            pred = preds.get((p.image_id, region, level, trial))
            wrong, trials = tally.get((p.image_id, region, level), (0, 0))
            line.append(g.shot_of_array(rgb, f"{region} noise {label(level)}, {wrong}/{trials} trials wrong",
                                        "" if pred is None else name(pred), None if pred is None else pred == p.label))
        lines.append(line)
    region = "object" if p.detail["region"] == "fg" else "background"
    score = (f"flips at {label(p.detail['level'])} with noise on the {region} "
             f"({100 * p.detail['wrong']:.0f}% of trials wrong); shown: trial {trial}")
    g.add(name(p.label), p.image_id, name(p.label), score, *lines)


@register_section("saliency_gallery", "Most and least aligned Grad-CAM maps", after="saliency")
def saliency_gallery(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.saliency.summary import class_namer as saliency_namer
    run = subject.latest("probe_saliency")
    if run is None:
        return None
    examples = json.loads(run["outputs"] or "{}").get("examples") or []
    if not examples:
        return None
    config = json.loads(run["config"])
    dataset_labels = config.get("label_space", "dataset") == "dataset"
    pred_name = saliency_namer(config.get("classes") or [], dataset_labels)
    name, files = class_namer(config.get("classes") or []), run_files(run)
    g = Gallery("Grad-CAM", ctx.thumbs, folder=files.folder("original"))
    for ex in examples:
        overlay = Path(ex["overlay"])
        ok = ex["pred"] == ex["label"] if dataset_labels else None
        shots = [g.shot_of_file(files.image("original", ex["image_id"]), "image"),
                 g.shot_of_file(overlay if overlay.is_file() else None, "Grad-CAM", pred_name(ex["pred"]), ok)]
        score = "all-zero map" if ex["precision"] is None else f"precision {ex['precision']:.2f}"
        g.add(pred_name(ex["pred"]), ex["image_id"], name(ex["label"]), f"{ex['rank']}: {score}", shots)
    return {"run_id": run["id"], "gallery": g.to_dict(), "layer": config.get("layer")}


@register_section("edits_gallery", "Edits that flip the prediction", after="edits")
def edits_gallery(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    from ..measures.edit_drops.summary import ORIGINAL, level_order, split_level
    from .examples import edit_flips
    from ..probing.tables import stored_table
    from ..edits.registry import ATTRIBUTES
    run = subject.latest("eval")
    if run is None:
        return None
    variants = json.loads(run["config"]).get("variants") or []
    levels = level_order([v for v in variants if split_level(v)[0] in ATTRIBUTES])
    if ORIGINAL not in variants or not levels:
        return None
    table = stored_table(ctx.store, run["id"], variants=[ORIGINAL, *levels])
    rows = {v: {i: (int(y), int(p), float(c)) for i, y, p, c in zip(t.image_ids, t.labels, t.preds, t.conf)}
            for v, t in table.variants.items()}
    files, name = run_files(run), class_namer(subject.classes)
    galleries = []
    for level in (v for v in levels if v in rows):
        g = Gallery(level, ctx.thumbs, folder=files.folder(level))
        for p in edit_flips(rows[ORIGINAL], rows[level], PER_CLASS):
            shots = [g.shot_of_file(files.image(ORIGINAL, p.image_id), "before", name(p.detail["before"]), True),
                     g.shot_of_file(files.image(level, p.image_id), level, name(p.detail["after"]), False)]
            g.add(name(p.label), p.image_id, name(p.label), f"after the edit: {p.score:.2f} confident", shots)
        galleries.append(g.to_dict())
    return {"run_id": run["id"], "galleries": galleries, "per_class": PER_CLASS}
