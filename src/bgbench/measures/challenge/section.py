"""What the report shows of the Backgrounds Challenge: its accuracy, per-class rates and Fig. 4 and
Fig. 24 of a --full run, the foregrounds the most backgrounds fool, and the hijack matrix."""
from __future__ import annotations

import json
from typing import List, Optional, Sequence

import numpy as np

from ...errors import DataError
from ...evaluation.metrics import finite_or_none, percent
from .matrix import hijack_matrix, labels_in_layout_order, top_backgrounds
from ..examples import Pick, top_per_class
from ..registry import SectionContext, SectionSubject, estimate


#: Backgrounds per class shown by attack success rate (the paper's Fig. 4 shows five).
TOP_BACKGROUNDS = 5


def challenge_run(subject: SectionSubject, ctx: SectionContext):
    """The newest --full challenge run (it has per-background ASR), else the newest challenge run."""
    runs = [r for r in subject.runs if r["kind"] == "challenge"]
    full = [r for r in runs if ctx.store.has_challenge_backgrounds(r["id"])]
    return (full or runs or [None])[-1], bool(full)


def challenge_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    run, full = challenge_run(subject, ctx)
    if run is None:
        return None
    m = ctx.metrics(run["id"])
    classes = subject.classes
    per_class = [{"class": c, "challenge": estimate(m.get(("challenge_accuracy_class", c))),
                  "fool_rate": estimate(m.get(("class_fool_rate", c)))} for c in classes]
    fooled = m.get(("fooled", ""))
    data = {"run_id": run["id"], "challenge": estimate(m.get(("challenge_accuracy", ""))),
            "clean": estimate(m.get(("clean_accuracy", ""))),
            "pairs": int(m[("challenge_pairs", "")]["value"]) if ("challenge_pairs", "") in m else None,
            "fooled": int(fooled["value"]) if fooled else None, "total": fooled["n"] if fooled else None,
            "per_class": [r for r in per_class if r["challenge"] is not None], "full": full,
            "top5": None, "histogram": None, "top": TOP_BACKGROUNDS}
    if not full:
        return data
    rows = ctx.store.challenge_backgrounds(run["id"])
    ids = [r["bg_id"] for r in rows]
    labels = np.array([r["bg_class"] for r in rows])
    asr = np.array([r["asr"] for r in rows], dtype=float)
    names = classes or [str(c) for c in range(int(labels.max()) + 1)]
    data["histogram"] = ctx.href(ctx.plots.asr_histogram(ctx.figure_path(subject, "asr-histogram"), asr, labels, names))
    data["top5"] = _top_backgrounds(ctx, run, ids, labels, asr, names)
    return data


def _top_backgrounds(ctx: SectionContext, run, ids, labels: np.ndarray, asr: np.ndarray, names) -> dict:
    """The paper's Fig. 4 as a gallery: each class's TOP_BACKGROUNDS backgrounds (ONLY-BG-T) by attack
    success rate, read from the stored rates and the dataset's files (one thumbnail sheet)."""
    files = ctx.files(run)
    g = ctx.gallery("Most fooling backgrounds per class", folder=files.folder("only_bg_t"))
    for c, idx in sorted(top_backgrounds(asr, labels, k=TOP_BACKGROUNDS).items()):
        for rank, j in enumerate(idx, start=1):
            shot = g.shot(files.image("only_bg_t", ids[j]), f"ASR {percent(asr[j], 0, 0)}")
            g.add(names[c], ids[j], f"#{rank}", "", [shot])
    return g.to_dict()


def challenge_gallery(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from ..examples import class_namer, per_class
    from ...data.in9 import discover
    run, full = challenge_run(subject, ctx)
    if run is None or not full:
        return None
    try:
        layout = discover(run["data_root"], split=json.loads(run["config"]).get("split", "val"),
                          variants=["original", "only_bg_t"])
        pairs, bg_items = layout.foregrounds(), layout.items("only_bg_t")
    except DataError as e:
        return {"run_id": run["id"], "missing": f"its images are not readable any more ({e})"}
    matrix = ctx.store.challenge_matrix(run["id"], [it.image_id for it, _ in pairs])
    if matrix is None or matrix.shape != (len(pairs), len(bg_items)):
        return {"run_id": run["id"], "missing": f"the data under {run['data_root']} changed since the run "
                                                 f"({len(pairs)} x {len(bg_items)}, stored matrix "
                                                 f"{'missing rows' if matrix is None else matrix.shape})"}
    asr_of = {r["bg_id"]: r["asr"] for r in ctx.store.challenge_backgrounds(run["id"])}
    asr = np.array([asr_of.get(it.image_id, 0.0) for it in bg_items])
    name = class_namer(list(layout.classes))
    clean = {r["image_id"]: r["clean_pred"] for r in ctx.store.challenge_results(run["id"])}
    k = per_class(len(layout.classes))
    fooled = ctx.gallery("Foregrounds fooled by the most backgrounds", folder=layout.root.as_posix())
    for p in most_fooled(np.asarray(matrix), [it.image_id for it, _ in pairs], np.array([it.label for it, _ in pairs]),
                         asr, k):
        _fooled_item(fooled, name, p, pairs[p.detail["row"]], bg_items[p.detail["bg"]], asr, clean)
    return {"run_id": run["id"], "fooled": fooled.to_dict(), "per_class": k, "backgrounds": len(bg_items),
            "missing": None}


def _fooled_item(g, name, p, pair, bg, asr: np.ndarray, clean: dict) -> None:
    """The foreground, the background that fools it, and their composite, made as the engine
    makes it: the foreground's pixels where its mask is set, the background's elsewhere."""
    from ...data.images import decode_image, read_mask
    item, mask_path = pair
    image, mask, background = decode_image(item.path), read_mask(mask_path), decode_image(bg.path)
    composite = np.where(mask[..., None], image, background)
    c = clean.get(item.image_id)
    shots = [g.shot(item.path, "original", "" if c is None else name(c), None if c is None else c == p.label),
             g.shot(bg.path, f"background of {name(bg.label)}, ASR {percent(asr[p.detail['bg']], 0, 0)}"),
             g.shot(composite, "composite", name(p.detail["pred"]), False)]
    n, total = p.detail["fooled_by"], p.detail["backgrounds"]
    g.add(name(p.label), item.image_id, name(p.label),
          f"fooled by {n}/{total} backgrounds ({percent(n / total, 0, 0)})", shots)


def hijack_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    run, full = challenge_run(subject, ctx)
    if run is None or not full:
        return None
    verdicts = ctx.store.challenge_results(run["id"])  # by image id, as the matrix's rows below
    matrix = ctx.store.challenge_matrix(run["id"], [r["image_id"] for r in verdicts])
    fg_labels = np.array([r["label"] for r in verdicts], dtype=np.int64)
    bg_labels = labels_in_layout_order([r["bg_class"] for r in ctx.store.challenge_backgrounds(run["id"])])
    if matrix is None or matrix.shape != (len(fg_labels), len(bg_labels)):
        return {"run_id": run["id"], "missing": f"the run's stored prediction matrix (it has "
                                                 f"{'none' if matrix is None else matrix.shape}, the run "
                                                 f"{len(fg_labels)} x {len(bg_labels)})"}
    names = json.loads(run["config"]).get("classes") or subject.classes
    h = hijack_matrix(np.asarray(matrix), fg_labels, bg_labels, len(names))
    counts = np.bincount(fg_labels, minlength=len(names))
    figure = ctx.plots.hijack_heatmap(ctx.figure_path(subject, "hijack"), h, names)
    return {"run_id": run["id"], "figure": ctx.href(figure), "classes": names,
            "rows": [{"class": c, "n": int(counts[a]), "cells": finite_or_none(h[a])} for a, c in enumerate(names)],
            "fool_rate": finite_or_none([_weighted_column(h, counts, b) for b in range(len(names))]),
            "missing": None}


def _weighted_column(h: np.ndarray, counts: np.ndarray, b: int) -> float:
    """Column b's mean over the other classes, weighted by their foregrounds: the class fool rate."""
    rows = [a for a in range(len(counts)) if a != b and counts[a] > 0 and not np.isnan(h[a, b])]
    total = sum(counts[a] for a in rows)
    return float(sum(counts[a] * h[a, b] for a in rows) / total) if total else float("nan")


def most_fooled(matrix: np.ndarray, fg_ids: Sequence[str], fg_labels: np.ndarray, asr: np.ndarray,
                per_class: int) -> List[Pick]:
    """Foregrounds fooled by the most backgrounds (a --full prediction matrix: foregrounds x
    backgrounds), each with one background that fools it: of those, the one with the highest
    attack success rate (ties: the first). Foregrounds never fooled are not shown."""
    matrix = np.asarray(matrix)
    wrong = matrix != np.asarray(fg_labels)[:, None].astype(matrix.dtype)
    counts = wrong.sum(axis=1)
    best = np.where(wrong, np.asarray(asr, dtype=float)[None, :], -np.inf).argmax(axis=1)  # the first of ties
    picks = [Pick(fg_ids[i], int(fg_labels[i]), float(counts[i]) / matrix.shape[1],
                  {"row": int(i), "fooled_by": int(counts[i]), "backgrounds": int(matrix.shape[1]),
                   "bg": int(best[i]), "pred": int(matrix[i, best[i]])}) for i in np.nonzero(counts)[0]]
    return top_per_class(picks, per_class)
