"""The report's attribute heatmap (RIVAL10 §4, its Fig. 3): region × model, one cell per drop.

Each model's newest `probe ablate` run is summarized from its stored per-image rows
(`ablation_summary`, the same numbers as `bgbench probe ablate`); the page shows, for every region
(the object, the background, each attribute) and every model, the accuracy drop and the drop in
true-class probability when the region is grayed out. A cell's shade is the drop's size, so the
parts a model leans on stand out across models; the interval and the image count are in the cell.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from .context import ReportContext
from .sections import register_section

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


@register_section("ablation", "Attribute ablation (RIVAL10)", scope="page")
def ablation_heatmap(ctx: ReportContext) -> Optional[dict]:
    """Regions (object, background, attributes in order) × models with a probe_ablate run."""
    from ..measures.ablation.probe import ablation_summary
    from ..measures.ablation.summary import OBJECT_REGIONS, region_label
    columns, summaries = [], []
    for subject in ctx.subjects:
        run = subject.latest("probe_ablate")
        if run is not None:
            columns.append({"key": subject.key, "label": subject.label, "run_id": run["id"]})
            summaries.append(ablation_summary(ctx.store, run["id"]).regions)
    if not columns:
        return None
    found = {r for s in summaries for r in s}
    regions = [r for r in OBJECT_REGIONS if r in found] + sorted(found - set(OBJECT_REGIONS))
    maps: Dict[str, List[dict]] = {}
    for measure, title in MEASURES:
        rows = [{"region": region_label(r), "cells": [_cell(s.get(r), measure) for s in summaries]} for r in regions]
        maps[measure] = {"title": title, "rows": rows}
    return {"models": columns, "maps": [maps[m] for m, _ in MEASURES]}
