"""What the report shows of Salient ImageNet: clean and noisy accuracy with noise on the core and on
the spurious regions, and the classes whose accuracy drops most with noise on their spurious regions."""
from __future__ import annotations

from typing import Optional

from ..registry import SectionContext, SectionSubject, stored_section

SHOWN = 10


@stored_section
def salient_section(ctx: SectionContext, subject: SectionSubject, run, summary) -> Optional[dict]:
    doc = summary.to_dict()
    sets = doc["noise_on"]
    spurious = sets.get("spurious", {}).get("per_class", [])
    worst = sorted(spurious, key=lambda c: (-(c["drop"] if c["drop"] is not None else -1.0), c["index"]))
    return {"run_id": run["id"], "noise_std": doc["noise_std"],
            "rows": [{"target": t, **{k: v for k, v in s.items() if k != "per_class"}} for t, s in sets.items()],
            "worst": worst[:SHOWN]}
