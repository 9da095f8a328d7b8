"""What the report shows of an eval run: accuracy per variant with its Wilson interval (a bar chart)
and the BG-Gap; on Waterbirds, wilds' average and worst-group accuracy beside them."""
from __future__ import annotations

import json
from typing import Optional


from ..registry import estimate, SectionContext, SectionSubject


def eval_accuracies(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    run = subject.latest("eval")
    if run is None:
        return None
    metrics = ctx.metrics(run["id"])
    order = json.loads(run["config"]).get("variants") or []
    variants = [v for v in order if ("accuracy", v) in metrics]
    variants += sorted(v for (name, v) in metrics if name == "accuracy" and v not in variants)
    wilds = {name: estimate(metrics.get((name, "original"))) for name in ("adj_acc_avg", "acc_wg")}
    return {"run": run, "variants": variants, "accuracy": {v: estimate(metrics[("accuracy", v)]) for v in variants},
            "bg_gap": estimate(metrics.get(("bg_gap", ""))), "wilds": wilds if all(wilds.values()) else None}


def accuracy_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    data = eval_accuracies(ctx, subject)
    if data is None or not data["variants"]:
        return None
    acc = data["accuracy"]
    vs = data["variants"]
    path = ctx.plots.accuracy_bars(ctx.figure_path(subject, "accuracy"), vs, [acc[v]["value"] for v in vs],
                                 [acc[v]["lo"] for v in vs], [acc[v]["hi"] for v in vs])
    return {**data, "figure": ctx.href(path), "run_id": data["run"]["id"],
            "mapping": json.loads(data["run"]["config"]).get("mapping")}
