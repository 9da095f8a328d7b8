"""What the report shows of ImageNet-X: every factor's error ratio with its interval, worst first."""
from __future__ import annotations

from typing import Optional

from ..registry import SectionContext, SectionSubject


def imagenet_x_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    found = MEASURE.stored(ctx, subject)
    if found is None:
        return None
    run, summary = found
    doc = summary.to_dict()
    order = sorted(doc["factors"].items(), key=lambda kv: -(kv[1]["error_ratio"]["value"] or -1e9))
    return {"run_id": run["id"], "images": doc["images"], "accuracy": doc["accuracy"],
            "factors": [{"name": k, **v} for k, v in order]}
