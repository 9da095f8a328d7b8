"""What the report shows of the features measure: each class's top features with their background
shares and spurious flags, beside the heatmap galleries the run drew (copied into the report)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional


from ..registry import SectionContext, SectionSubject, stored_section


@stored_section
def features_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    galleries = json.loads(run["outputs"] or "{}").get("galleries") or {}
    classes = []
    for c in summary.per_class:
        source = Path(galleries[str(c["class_index"])]) if str(c["class_index"]) in galleries else None
        figure = None
        if source is not None and source.is_file():  # copied, so that the report stands alone
            figure = ctx.href(ctx.plots.picture(source, ctx.figure_path(subject, f"features-{c['class_index']}")))
        classes.append({**c, "figure": figure})
    config = json.loads(run["config"])
    return {"run_id": run["id"], "classes": classes, "bg_share": summary.bg_share, "bg_area": summary.bg_area,
            "spurious": summary.spurious, "features": len(summary.features), "rule": summary.rule,
            "group_by": summary.group_by, "top_spurious": summary.top_spurious, "images": config.get("images"),
            "top_images": config.get("top_images"), "pooled_is_map_mean": config.get("pooled_is_map_mean")}
