"""What the report shows of Spurious ImageNet: the score, its ROC AUC reading, and the classes whose
spurious feature raises them most (lowest AP first)."""
from __future__ import annotations

from typing import Optional

from ..registry import SectionContext, SectionSubject, stored_section

SHOWN = 15


@stored_section
def spurious_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    doc = summary.to_dict()
    worst = sorted(doc["classes"], key=lambda c: (c["ap"] if c["ap"] is not None else -1.0, c["index"]))
    return {"run_id": run["id"], "score": doc["spurious_score"], "auroc": doc["spurious_auroc"],
            "joint": doc["spurious_score_joint"], "images": doc["images"], "classes": len(doc["classes"]),
            "worst": worst[:SHOWN]}
