"""What the report shows of the attribution measure: per attribute, the feature whose activation
map best overlaps its mask, with the interval over the images, and the best over all classes."""
from __future__ import annotations

from typing import Optional

from ..registry import SectionContext, SectionSubject, stored_section
from .summary import ALL


@stored_section
def attribution_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    rows = [{"attribute": attribute, "class": b["class"], "feature": b["feature"], "iou": b["iou"], "lo": b["lo"],
             "hi": b["hi"], "images": b["images"], "all": summary.groups[attribute][ALL]["features"][0]}
            for attribute, b in summary.best.items()]
    return {"run_id": run["id"], "rows": rows, "images": summary.images, "mean_best_iou": summary.mean_best_iou}
