"""What the report shows of box size: the accuracy curve of each background-only variant against
the foreground box's share of the image (paper Fig. 14)."""
from __future__ import annotations

import json
from typing import Optional


from ..analysis import eval_section
from ..registry import SectionContext, SectionSubject


def _curves(store, run):
    """The run's curves of its background-only variants and ORIGINAL, where it has one; boxes come from
    the dataset's records (or ONLY-BG-B): without the data, no curve."""
    from .summary import box_size_curve
    variants = [v for v in ("only_bg_t", "only_bg_b", "original") if v in (json.loads(run["config"]).get("variants")
                                                                          or [])]
    return box_size_curve(store, run["id"], variants=variants, bins=5) if variants else None


@eval_section(_curves)
def boxsize_section(ctx: SectionContext, subject: SectionSubject, run, result) -> Optional[dict]:
    curves = {v: [{**p, "mid": 50 * (p["lo"] + p["hi"])} for p in points] for v, points in result.curves.items()}
    path = ctx.plots.binned_curves(ctx.figure_path(subject, "boxsize"), curves,
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
