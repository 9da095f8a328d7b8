"""The report section of the groups measure: the worst group (MIXED-RAND's (class, background class)
group, or a group dataset's own), the mean over groups, and the ten worst groups with intervals."""
from __future__ import annotations

from typing import Optional

from ..analysis import eval_section
from ..registry import SectionContext, SectionSubject

#: Groups listed in the report, worst first.
SHOWN = 10


def _worst_group(store, run):
    """The run's groups where it holds mixed_rand or original; they come from the dataset's manifest
    (or group file): without it, no section."""
    from .stored import worst_group
    return worst_group(store, run["id"]) if {"mixed_rand", "original"} & set(store.run_variants(run["id"])) else None


@eval_section(_worst_group)
def groups_section(ctx: SectionContext, subject: SectionSubject, run, result) -> Optional[dict]:
    shown = sorted(result.groups, key=lambda g: (g["acc"], g["group"]))[:SHOWN]
    return {"run_id": run["id"], "variant": result.variant, "worst": result.worst, "mean": result.mean, "overall": result.overall,
            "groups": len(result.groups), "min_images": result.min_images, "shown": shown}
