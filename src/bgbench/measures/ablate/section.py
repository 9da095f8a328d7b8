"""What the report shows of the ablation measure: one heatmap of regions by models for each drop
(accuracy, true-class probability), each cell with its interval."""
from __future__ import annotations

from typing import Optional


from ..registry import SectionContext


#: The heatmap's colours: a drop (the region helped) in vermilion, a gain in blue (Okabe-Ito).
DROP_RGB, GAIN_RGB = (213, 94, 0), (0, 114, 178)


MEASURES = (("acc_drop", "accuracy drop"), ("prob_drop", "drop in true-class probability"))


def shade(value: Optional[float]) -> str:
    """A CSS background for a drop in [-1, 1]: opacity |value|, colour by sign; none when missing."""
    if value is None or value != value:
        return "transparent"
    r, g, b = DROP_RGB if value >= 0 else GAIN_RGB
    return f"rgba({r}, {g}, {b}, {min(1.0, abs(value)):.3f})"


def _cell(entry: Optional[dict], measure: str) -> Optional[dict]:
    if entry is None:
        return None
    e = entry[measure]
    return {"value": e["value"], "lo": e["lo"], "hi": e["hi"], "n": entry["n"], "shade": shade(e["value"])}


def ablation_heatmap(ctx: SectionContext) -> Optional[dict]:
    """Regions (object, background, attributes in order) × models with an ablation run."""
    from . import MEASURE
    from ..common.regions import region_label
    from .summary import OBJECT_REGIONS
    columns, summaries = [], []
    for subject in ctx.subjects:
        found = MEASURE.stored(ctx, subject)
        if found is not None:
            columns.append({"key": subject.key, "label": subject.label, "run_id": found[0]["id"]})
            summaries.append(found[1].regions)
    if not columns:
        return None
    found = {r for s in summaries for r in s}
    regions = [r for r in OBJECT_REGIONS if r in found] + sorted(found - set(OBJECT_REGIONS))

    def rows(measure: str) -> list:  # a row per region, a cell per model
        return [{"region": region_label(r), "cells": [_cell(s.get(r), measure) for s in summaries]} for r in regions]
    return {"models": columns, "maps": [{"title": title, "rows": rows(measure)} for measure, title in MEASURES]}
