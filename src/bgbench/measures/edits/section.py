"""What the report shows of ImageNet-E's edits: each level's accuracy drop from ORIGINAL with its
paired interval, and the edits that flip a prediction."""
from __future__ import annotations

from typing import List, Mapping, Optional


from ..examples import Pick, class_namer, per_class, top_per_class
from ..registry import SectionContext, SectionSubject
from .summary import ORIGINAL, edit_drops, edited_levels


def edits_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    run = subject.latest("eval")
    if not edited_levels(run):
        return None  # not an eval of an edit dataset
    drops = edit_drops(ctx.store, [run["id"]])
    levels = [lv.to_dict() for lv in drops.levels]
    path = ctx.plots.drop_bars(ctx.figure_path(subject, "edits"), [lv["variant"] for lv in levels],
                             [lv["drop"] for lv in levels], [lv["lo"] for lv in levels], [lv["hi"] for lv in levels])
    return {"run_id": run["id"], "original": drops.original.as_dict(), "levels": levels, "figure": ctx.href(path)}


def edits_gallery(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from ...probing.tables import stored_table
    run = subject.latest("eval")
    levels = edited_levels(run)
    if not levels:
        return None
    table = stored_table(ctx.store, run["id"], variants=[ORIGINAL, *levels])
    rows = {v: {i: (int(y), int(p), float(c)) for i, y, p, c in zip(t.image_ids, t.labels, t.preds, t.conf)}
            for v, t in table.variants.items()}
    files, name, k = ctx.files(run), class_namer(subject.classes), per_class(len(subject.classes))
    galleries = []
    for level in (v for v in levels if v in rows):
        g = ctx.gallery(level, folder=files.folder(level))
        for p in edit_flips(rows[ORIGINAL], rows[level], k):
            shots = [g.shot(files.image(ORIGINAL, p.image_id), "before", name(p.detail["before"]), True),
                     g.shot(files.image(level, p.image_id), level, name(p.detail["after"]), False)]
            g.add(name(p.label), p.image_id, name(p.label), f"after the edit: {p.score:.2f} confident", shots)
        galleries.append(g.to_dict())
    return {"run_id": run["id"], "galleries": galleries, "per_class": k}


def edit_flips(original: Mapping[str, tuple], edited: Mapping[str, tuple], per_class: int) -> List[Pick]:
    """Images right before the edit and wrong after it, scored by the confidence of the wrong
    prediction. original, edited: image id -> (label, pred, confidence)."""
    picks = []
    for image_id, (label, pred, conf) in edited.items():
        before = original.get(image_id)
        if before is None or before[1] != before[0] or pred == label:
            continue
        picks.append(Pick(image_id, int(label), float(conf),
                          {"before": int(before[1]), "before_conf": float(before[2]), "after": int(pred)}))
    return top_per_class(picks, per_class)
