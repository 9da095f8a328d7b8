"""The scorecard: one row per model, the headline of every measure with its interval, datasets as
column groups, each cell a link to the section it summarizes.

The columns come from the Measure registry (each measure's declared `headlines`, in catalog
order) plus eval's worst-group accuracy, and only those some chosen model has are shown. A cell is
the stored metric of the model's newest run of that kind on that dataset: the same number that
`bgbench runs` prints as the run's headline and the section shows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..measures.registry import Headline, Measure, list_measures
from .context import ReportContext, Subject

#: Eval's worst group: MIXED-RAND's (class, background class) groups, else a group dataset's own.
WORST_GROUP = Headline("worst_group_accuracy", "mixed_rand", label="worst-group accuracy (MIXED-RAND's (class, "
                       "background class) groups, or a group dataset's)", percent=True, short="worst group")


@dataclass(frozen=True)
class Column:
    measure: Measure
    headline: Headline
    variants: Tuple[str, ...]  # the metric's variants, tried in order

    @property
    def key(self) -> str:
        return f"{self.measure.name}:{self.headline.metric}:{self.headline.variant}"

    @property
    def title(self) -> str:
        return self.headline.short or self.headline.label or self.headline.metric

    @property
    def description(self) -> str:
        return self.headline.label or self.headline.metric


def columns() -> List[Column]:
    out = []
    for m in list_measures():
        if m.kind is None:
            continue
        for h in m.headlines:
            out.append(Column(m, h, (h.variant,)))
        if m.name == "eval":
            out.append(Column(m, WORST_GROUP, ("mixed_rand", "original")))
    return out


def _section_href(subject: Subject, measure: Measure) -> str:
    """Where a cell links: the measure's section of this model, its page-wide section, or the model."""
    for spec in measure.sections:
        return f"#{subject.key}-{spec.name}" if spec.scope == "model" else f"#{spec.name}"
    return f"#{subject.key}"


def cell(ctx: ReportContext, subject: Subject, column: Column) -> Optional[dict]:
    run = subject.latest(column.measure.kind)
    if run is None:
        return None
    metrics = ctx.metrics(run["id"])
    for variant in column.variants:
        row = metrics.get((column.headline.metric, variant))
        if row is not None and row["value"] is not None:
            return {"value": row["value"], "lo": row["lo"], "hi": row["hi"], "n": row["n"], "run": run["id"],
                    "href": _section_href(subject, column.measure)}
    return None


def scorecard(ctx: ReportContext) -> Optional[dict]:
    """Template data: datasets (column groups), columns per dataset, one row per model label."""
    cols = columns()
    datasets: Dict[str, dict] = {}
    rows: Dict[str, dict] = {}
    for s in ctx.subjects:
        key = s.data_fingerprint or "-"
        datasets.setdefault(key, {"key": key, "root": s.data_root, "name": _dataset_name(s), "columns": set()})
        row = rows.setdefault(s.label, {"label": s.label, "cells": {}})
        for c in cols:
            found = cell(ctx, s, c)
            if found is not None:
                row["cells"][(key, c.key)] = found
                datasets[key]["columns"].add(c.key)
    groups = []
    for d in datasets.values():
        shown = [c for c in cols if c.key in d["columns"]]
        if shown:
            groups.append({**d, "columns": [{"key": c.key, "title": c.title, "description": c.description,
                                             "percent": c.headline.percent, "higher": c.headline.higher_is_better}
                                            for c in shown]})
    if not groups:
        return None
    out_rows = [{"label": r["label"], "cells": [[r["cells"].get((g["key"], c["key"])) for c in g["columns"]]
                                                for g in groups]} for r in rows.values()]
    return {"groups": groups, "rows": out_rows}


def _dataset_name(subject: Subject) -> str:
    from pathlib import Path
    return Path(subject.data_root).name if subject.data_root else (subject.data_fingerprint or "-")[:12]
