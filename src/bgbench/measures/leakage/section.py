"""What the report shows of box leakage: background-only accuracy above chance, and NO-FG's
silhouette signal apart (paper §5)."""
from __future__ import annotations

from typing import Optional


from ..analysis import eval_section
from ..registry import SectionContext, SectionSubject
from .summary import SILHOUETTE, SILHOUETTE_NAME, above_chance, leakage


#: Training variants whose models should be at chance without the object (paper §5).
LEAKAGE_TRAINING = ("mixed_rand", "only_fg")


@eval_section(lambda store, run: leakage(store, run["id"]))  # none without only_bg_b and only_bg_t
def leakage_section(ctx: SectionContext, subject: SectionSubject, run, result) -> Optional[dict]:
    """Shown for models trained on MIXED-RAND or ONLY-FG only: for them background-only accuracy
    should be chance, so its excess is leakage; for any other model it is background signal."""
    if result.trained_on not in LEAKAGE_TRAINING:
        return None
    rows = [{"variant": v, "acc": result.accuracy[v], "excess": e} for v, e in result.excess().items()]
    silhouette = None if result.silhouette is None else {
        "variant": SILHOUETTE, "name": SILHOUETTE_NAME, "acc": result.silhouette,
        "excess": above_chance(result.silhouette, result.chance)}
    return {"run_id": run["id"], "chance": result.chance, "trained_on": result.trained_on, "rows": rows,
            "silhouette": silhouette}
