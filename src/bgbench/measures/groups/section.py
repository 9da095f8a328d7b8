"""The report section of the groups measure: the worst group (MIXED-RAND's (class, background class)
group, or a group dataset's own), the mean over groups, and the ten worst groups with intervals."""

from typing import Optional

from ...errors import BgbenchError
from ..registry import SectionContext, SectionSubject

#: Groups listed in the report, worst first.
SHOWN = 10


def groups_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from .stored import worst_group
    run = subject.latest("eval")
    if run is None or not {"mixed_rand", "original"} & set(ctx.store.run_variants(run["id"])):
        return None
    try:  # the groups come from the dataset's manifest: without it, no section
        result = worst_group(ctx.store, run["id"])
    except BgbenchError:
        return None
    shown = sorted(result.groups, key=lambda g: (g["acc"], g["group"]))[:SHOWN]
    return {"run_id": run["id"], "variant": result.variant, "worst": result.worst, "mean": result.mean, "overall": result.overall,
            "groups": len(result.groups), "min_images": result.min_images, "shown": shown}
