"""What the report shows of the prediction categories: the paper's Table 3 per class, and the images
behind each category."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from ...probing.tables import stored_table
from ..analysis import eval_section
from ..examples import Pick, class_namer, per_class, top_per_class
from ..registry import SectionContext, SectionSubject
from .summary import CATEGORIES, NEEDED, JudgedImages, judge_images, prediction_categories


#: How the galleries name the three inputs of the prediction categories.
CATEGORY_INPUTS = {"original": "ORIGINAL", "mixed_rand": "MIXED-RAND", "only_bg_t": "ONLY-BG-T"}


CATEGORY_GALLERIES = ("BG Required", "BG Fools")


# (none where the eval run lacks original, mixed_rand or only_bg_t)
@eval_section(lambda store, run: prediction_categories(store, run["id"]))
def categories_section(ctx: SectionContext, subject: SectionSubject, run, result) -> Optional[dict]:
    path = ctx.plots.category_bars(ctx.figure_path(subject, "categories"), result.overall)
    return {"run_id": run["id"], "n": result.n, "categories": list(CATEGORIES), "overall": result.overall,
            "per_class": result.per_class, "figure": ctx.href(path)}


def category_examples(judged: JudgedImages, category: str, per_class: int) -> List[Pick]:
    """Images of `category` (e.g. 'BG Required'), scored by their ONLY-BG-T confidence."""
    wanted = CATEGORIES.index(category)
    picks = []
    for k in np.nonzero(judged.categories == wanted)[0]:
        preds = {v: int(p[k]) for v, p in judged.preds.items()}
        conf = {v: float(c[k]) for v, c in judged.conf.items()}
        picks.append(Pick(judged.image_ids[k], int(judged.labels[k]), conf["only_bg_t"],
                          {"preds": preds, "conf": conf}))
    return top_per_class(picks, per_class)


@eval_section(lambda store, run: judge_images(stored_table(store, run["id"], variants=NEEDED)))
def categories_gallery(ctx: SectionContext, subject: SectionSubject, run, judged) -> Optional[dict]:
    files, name, k = ctx.files(run), class_namer(subject.classes), per_class(len(subject.classes))
    galleries = []
    for category in CATEGORY_GALLERIES:
        g = ctx.gallery(category, folder=files.folder("original"))
        for p in category_examples(judged, category, k):
            preds = p.detail["preds"]
            shots = [g.shot(files.image(v, p.image_id), title, name(preds[v]), preds[v] == p.label)
                     for v, title in CATEGORY_INPUTS.items()]
            g.add(name(p.label), p.image_id, name(p.label), f"ONLY-BG-T confidence {p.score:.2f}", shots)
        galleries.append(g.to_dict())
    return {"run_id": run["id"], "galleries": galleries, "per_class": k}
