"""What the report shows of ImageNet-X: every factor's error ratio with its interval, worst first."""
from __future__ import annotations

from typing import Optional

from ..registry import SectionContext, SectionSubject, stored_section


@stored_section
def imagenet_x_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    doc = summary.to_dict()
    order = sorted(doc["factors"].items(), key=lambda kv: -(kv[1]["error_ratio"]["value"] or -1e9))
    return {"run_id": run["id"], "images": doc["images"], "accuracy": doc["accuracy"],
            "factors": [{"name": k, **v} for k, v in order]}
