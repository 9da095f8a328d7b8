"""What the report shows of the prediction categories: the paper's Table 3 per class, and the images
behind each category."""
from __future__ import annotations

from typing import Optional


from ...drawing import figures
from ...drawing.gallery import Gallery, class_namer, per_class
from ...errors import BgbenchError
from ..examples import run_files
from ..registry import SectionContext, SectionSubject


#: How the galleries name the three inputs of the prediction categories.
CATEGORY_INPUTS = {"original": "ORIGINAL", "mixed_rand": "MIXED-RAND", "only_bg_t": "ONLY-BG-T"}


CATEGORY_GALLERIES = ("BG Required", "BG Fools")


def categories_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from ..categories.summary import CATEGORIES, prediction_categories
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


def categories_gallery(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from ..categories.summary import NEEDED, judge_images
    from ..examples import category_examples
    from ...probing.tables import stored_table
    run = subject.latest("eval")
    if run is None:
        return None
    try:
        judged = judge_images(stored_table(ctx.store, run["id"], variants=NEEDED))
    except BgbenchError:  # the run lacks one of the three variants
        return None
    files, name, k = run_files(run), class_namer(subject.classes), per_class(len(subject.classes))
    galleries = []
    for category in CATEGORY_GALLERIES:
        g = Gallery(category, ctx.thumbs, folder=files.folder("original"))
        for p in category_examples(judged, category, k):
            preds = p.detail["preds"]
            shots = [g.shot_of_file(files.image(v, p.image_id), title, name(preds[v]), preds[v] == p.label)
                     for v, title in CATEGORY_INPUTS.items()]
            g.add(name(p.label), p.image_id, name(p.label), f"ONLY-BG-T confidence {p.score:.2f}", shots)
        galleries.append(g.to_dict())
    return {"run_id": run["id"], "galleries": galleries, "per_class": k}
