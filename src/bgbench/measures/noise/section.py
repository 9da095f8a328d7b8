"""What the report shows of the noise measure: the curves with RFS per level, and the images that
noise flips first (their noisy copies redrawn from the stored seeds)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence


from ..examples import Pick, class_namer, clean_predictions, per_class, top_per_class
from ..registry import SectionContext, SectionSubject, stored_section


@stored_section
def noise_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    from ..common.regions import region_label
    curves = {f"noise on the {region_label(region)}": points for region, points in summary.curves.items()}
    kind = summary.grid["kind"]
    path = ctx.plots.binned_curves(ctx.figure_path(subject, "noise"), curves, x_key="level",
                                 xlabel="noise level (σ)" if kind != "l2" else "noise L2 norm")
    rows = [{"level": summary.label(fg["level"]), "fg": fg, "bg": bg,
             "rfs": None if fg["level"] not in summary.rfs else {**summary.rfs[fg["level"]], "n": summary.images}}
            for fg, bg in zip(summary.curves["fg"], summary.curves["bg"])]
    lo, hi = summary.rfs_overall_interval
    return {"run_id": run["id"], "rows": rows, "grid": summary.grid_label, "images": summary.images,
            "classes": summary.classes, "bootstrap": summary.bootstrap,
            "rfs_overall": {"value": summary.rfs_overall, "lo": lo, "hi": hi, "n": summary.images},
            "figure": ctx.href(path)}


def noise_gallery(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    run = subject.latest(MEASURE.kind)
    if run is None:
        return None
    config = json.loads(run["config"])
    # the object and the background (a --region attributes run's 'attr:<name>' rows are in the noise
    # section's curves; the gallery redraws copies from the object mask only)
    rows = [r for r in MEASURE.stored_rows(ctx.store, run["id"]) if r.region in ("fg", "bg")]
    clean = clean_predictions(ctx, subject)
    k = per_class(len(subject.classes))
    picks = noise_flips(rows, k, {i: y == p for i, (y, p) in clean.items()} if clean else None)
    preds = {(r.image_id, r.region, float(r.level), int(r.trial)): r.pred for r in rows}
    tally: Dict[tuple, list] = {}  # (image, region, level) -> [wrong trials, trials]
    for r in rows:
        t = tally.setdefault((r.image_id, r.region, float(r.level)), [0, 0])
        t[0], t[1] = t[0] + (not r.correct), t[1] + 1
    files, name = ctx.files(run), class_namer(subject.classes)
    g = ctx.gallery("Noise", folder=files.folder("original"))
    for p in picks:
        _noise_item(g, files, name, p, config, preds, tally, clean)
    return {"run_id": run["id"], "gallery": g.to_dict(), "per_class": k, "judged_clean": clean is not None}


def _noise_item(g, files, name, p, config: dict, preds: dict, tally: dict, clean) -> None:
    """One image: its clean self, then one line per region with its noisy copies (the trial that
    flipped it) at the level where it flips and at the grid's highest level, each with the
    prediction the probe stored for that copy and how many of the image's trials there were wrong;
    the item's text lists the wrong trials at every level."""
    from .draws import REGIONS, noisy_copy
    from ..noise.levels import level_label
    image, mask = files.pixels("original", p.image_id), files.mask_pixels(p.image_id)
    if image is None or mask is None:
        g.missing += 1
        return
    trial, kind = p.detail["trial"], config.get("kind", "sigma")
    label = lambda level: level_label(level, kind, config.get("grid") or "custom")  # noqa: E731
    clean_pred = clean.get(p.image_id) if clean else None
    lines = [[g.shot(files.image("original", p.image_id), "no noise",
                     name(clean_pred[1]) if clean_pred else "", clean_pred[0] == clean_pred[1]
                     if clean_pred else None)]]
    levels = sorted(float(v) for v in config["levels"])
    shown = sorted({float(p.detail["level"]), levels[-1]})
    for region in REGIONS:
        line = []
        for level in shown:
            rgb = noisy_copy(image, mask, p.image_id, int(config.get("seed", 0)), region, level, trial,
                             int(config["trials"]), kind)
            pred = preds.get((p.image_id, region, level, trial))
            wrong, trials = tally.get((p.image_id, region, level), (0, 0))
            line.append(g.shot(rgb, f"{region} noise {label(level)}, {wrong}/{trials} trials wrong",
                               "" if pred is None else name(pred), None if pred is None else pred == p.label))
        lines.append(line)
    region = "object" if p.detail["region"] == "fg" else "background"
    wrong_by_level = "; ".join(f"{r} " + ", ".join("{}/{}".format(*tally.get((p.image_id, r, lv), (0, 0)))
                                                   for lv in levels) for r in REGIONS)
    score = (f"flips at {label(p.detail['level'])} with noise on the {region} "
             f"({100 * p.detail['wrong']:.0f}% of trials wrong); shown: trial {trial}; trials wrong at "
             f"{', '.join(label(lv) for lv in levels)}: {wrong_by_level}")
    g.add(name(p.label), p.image_id, name(p.label), score, *lines)


def noise_flips(rows: Sequence[Any], per_class: int, clean_correct: Optional[Mapping[str, bool]] = None
                ) -> List[Pick]:
    """Images whose prediction noise flips at the lowest level.

    rows: the noise probe's (image_id, label, region, level, trial, correct, pred). An image flips in a region at a
    level when most of its trials there (more than half) are wrong; its score is the lowest such level
    over both regions (ties between regions: the larger wrong share, then fg). With
    `clean_correct` (image id -> right on the clean image, from an eval run) only images that
    were right without noise count; without it, every image that noise makes wrong counts.
    detail: the region and level of the flip, its wrong share, and the first wrong trial there.
    """
    wrong: Dict[tuple, Dict[int, bool]] = {}
    labels: Dict[str, int] = {}
    for r in rows:
        labels[r.image_id] = int(r.label)
        wrong.setdefault((r.image_id, r.region, float(r.level)), {})[int(r.trial)] = not r.correct
    flips: Dict[str, tuple] = {}
    for (image_id, region, level), trials in wrong.items():
        share = sum(trials.values()) / len(trials)
        if share <= 0.5 or (clean_correct is not None and not clean_correct.get(image_id, False)):
            continue
        key = (level, -share, ("fg", "bg").index(region) if region in ("fg", "bg") else 2)
        if image_id not in flips or key < flips[image_id][0]:
            first = min(t for t, w in trials.items() if w)
            flips[image_id] = (key, {"region": region, "level": level, "wrong": share, "trial": first})
    picks = [Pick(i, labels[i], key[0], detail) for i, (key, detail) in flips.items()]
    return top_per_class(picks, per_class, lowest_first=True)
