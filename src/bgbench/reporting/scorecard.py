"""The scorecard: one row per model, the headline of every measure with its interval, datasets as
column groups, each cell a link to the section it summarizes.

The columns come from the Measure registry (each measure's declared `headlines`, in their
declared order) plus, from the eval runs, worst-group accuracy, the paper's BG Required share and each
ImageNet-E level's accuracy drop; only those some chosen model has are shown. A cell is
the stored metric of the model's newest exact (fp32) run of that kind on that dataset (its newest run, with
its precision shown, where it has no exact one): the same number that
`bgbench runs` prints as the run's headline and the section shows.

On a benchmark's own data a measure may have headlines of its own (`Measure.benchmark_headlines`,
`benchmark_cells`): on Hard ImageNet's the probes compute Hard ImageNet's figures, not RIVAL10's, so
its dataset has the mean Grad-CAM IoU and delta density over images (`saliency_analysis.py`) and
the accuracy clean and under each ablation of the object (`ablations.py`) in place of saliency's
and ablate's RIVAL10 headlines, and the RFS of each noise level (`rfs.py`) beside bgbench's overall
RFS.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..classes import IMAGENET1K
from ..console import aligned
from ..measures.registry import Headline, Measure, list_measures
from ..measures.groups.summary import MIN_IMAGES
from ..evaluation.precision_flag import EXACT
from .context import ReportContext, Subject

#: Up to this many models, the scorecard reads down (text and page alike): one block per dataset, a
#: row per measure, a column per model; more models, a row per model and a column group per dataset.
READ_DOWN_UP_TO = 4

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

    def meta(self, key: Optional[str] = None) -> dict:
        """The column as the page and the files show it, under `key` (default its own)."""
        h = self.headline
        return {"key": key or self.key, "title": h.short or h.label or h.metric, "description": h.label or h.metric,
                "percent": h.percent, "higher": h.higher_is_better}


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


def _section_href(ctx: ReportContext, subject: Subject, measure: Measure) -> str:
    """Where a cell links: the measure's section of this model (on its model's page, in a report
    of many models), its page-wide section, or the model."""
    for spec in measure.sections:
        return f"{ctx.page_of(subject)}#{subject.key}-{spec.name}" if spec.scope == "model" else f"#{spec.name}"
    return f"{ctx.page_of(subject)}#{subject.key}"


def _row_label(subject: Subject) -> str:
    """A row's name: the model's label, marked when its weights are a random init (a study's own
    label would otherwise hide what `models.labels.model_label` shows everywhere else)."""
    seed = (subject.spec.get("extra") or {}).get("init_seed")
    if seed is None or "random init" in subject.label:
        return subject.label
    return f"{subject.label} [random init, seed {seed}]"


def _na(why: str, run: Optional[int] = None, href: Optional[str] = None, n: Optional[int] = None) -> dict:
    """A cell without a number: 'n/a: why', with the run that says so and where it links."""
    return {"value": None, "na": f"n/a: {why}", "lo": None, "hi": None, "n": n, "run": run, "href": href}


def cell(ctx: ReportContext, subject: Subject, column: Column) -> Optional[dict]:
    """A headline's cell: the value of the subject's run shown for its measure (`Subject.latest`),
    with its interval, n and where it links; n/a with a reason; or None."""
    run = subject.latest(column.measure.kind)
    if run is None:
        why = _skipped(ctx, {subject.model}, subject.data_root).get(column.measure.name)
        if why is not None:  # a study skipped it: n/a with the reason, never a silent gap
            return _na(why, href=f"{ctx.page_of(subject)}#{subject.key}")
        return None
    metrics = ctx.metrics(run["id"])
    href = _section_href(ctx, subject, column.measure)
    found = [(v, metrics[(column.headline.metric, v)]) for v in column.variants
             if (column.headline.metric, v) in metrics]
    for variant, row in found:
        if row["value"] is not None:
            out = {"value": row["value"], "lo": row["lo"], "hi": row["hi"], "n": row["n"], "run": run["id"],
                   "href": href}
            ref = column.headline.reference
            if ref and (metrics.get((ref[0], variant)) or {"value": None})["value"] is not None:
                out["reference"] = {"name": ref[1], "value": metrics[(ref[0], variant)]["value"]}
            return out
        if column.headline is WORST_GROUP:  # measured, but too few groups qualify
            k = row["n"] or 0
            return _na(f"{k} group{'' if k == 1 else 's'} of at least {MIN_IMAGES} images", run["id"], href)
    # measured, and undefined there (saliency of all-zero maps): said, not left blank
    return _na(f"undefined on these images (n={found[0][1]['n'] or 0})", run["id"], href,
               found[0][1]["n"]) if found else None


def _skipped(ctx: ReportContext, models, data_root: Optional[str]) -> Dict[str, str]:
    """measure -> why the study that made this report skipped it for any of `models` on `data_root`."""
    if not ctx.skipped or not data_root:
        return {}
    where = str(Path(data_root).resolve())
    return {measure: why for model in sorted(models) for measure, why in ctx.skipped.get((model, where), {}).items()}


def scorecard(ctx: ReportContext) -> Optional[dict]:
    """Template data: datasets (column groups), columns per dataset, one row per model label."""
    cols = columns()
    # column key -> (the column, the measure whose run fills it), in the page's order: the headlines', then
    # the columns found per subject (BG Required and the edits' drops from eval runs, a benchmark's from its measure's)
    meta = {c.key: (c.meta(), c.measure.name) for c in cols}
    datasets: Dict[str, dict] = {}
    rows: Dict[str, dict] = {}
    for s in ctx.subjects:
        key = s.data_fingerprint or "-"
        datasets.setdefault(key, {"key": key, "root": s.data_root, "name": _dataset_name(s), "columns": set()})
        row = rows.setdefault(s.label, {"label": _row_label(s), "cells": {}, "subjects": {}, "models": set()})
        row["subjects"][key] = provenance(s)
        row["models"].add(s.model)
        hard, replaced = benchmark_cells(ctx, s)
        found = {c.key: cell(ctx, s, c) for c in cols if not (hard and c.measure.name in replaced)}
        for level_key, (column, value, measure) in {**category_cells(ctx, s), **edit_drop_cells(ctx, s),
                                                    **hard}.items():
            meta.setdefault(level_key, (column, measure))
            found[level_key] = value
        for col_key, value in ((k, v) for k, v in found.items() if v is not None):
            if value.get("run") is not None:  # every number says its arithmetic
                value["precision"] = s.precisions[value["run"]]
            row["cells"][(key, col_key)] = value
            datasets[key]["columns"].add(col_key)
    groups = [{**d, "columns": [m for k, (m, _) in meta.items() if k in d["columns"]]} for d in datasets.values()
              if d["columns"]]  # in the subjects' order: a study's, else by name (`context`)
    if not groups:
        return None
    for row in rows.values():  # a model a study could not run on a dataset: n/a with the reason, not blank
        for g in groups:
            why = {} if g["key"] in row["subjects"] else _skipped(ctx, row["models"], g["root"])
            for c in g["columns"]:
                if meta[c["key"]][1] in why:
                    row["cells"][(g["key"], c["key"])] = _na(why[meta[c["key"]][1]])
    out_rows = [{"label": r["label"], "cells": [[r["cells"].get((g["key"], c["key"])) for c in g["columns"]]
                                                for g in groups],
                 "subjects": [r["subjects"].get(g["key"]) for g in groups]} for r in rows.values()]
    return {"groups": groups, "rows": out_rows, "down": len(out_rows) <= READ_DOWN_UP_TO}


def provenance(subject: Subject) -> dict:
    """What a scorecard row says of where its numbers on one dataset come from: the model string,
    its architecture and weights, the data's fingerprint, the test protocol and the bgbench
    versions that measured them."""
    spec = subject.spec
    protocols = sorted({json.loads(r["config"] or "{}").get("protocol") or "none" for r in subject.runs})
    return {"key": subject.key, "model": subject.model, "architecture": spec.get("arch"),
            "weights_sha256": subject.runs[-1]["checkpoint_sha256"], "data_root": subject.data_root,
            "data_fingerprint": subject.data_fingerprint, "protocol": ", ".join(protocols),
            "precision": shown_precision(subject),
            "ten_crop": subject.protocol == "ten-crop", "versions": sorted({r["version"] for r in subject.runs}),
            **preprocessing(subject)}


def shown_precision(subject: Subject) -> str:
    """The precision of the runs the subject's numbers come from (`Subject.latest` of each kind):
    'fp32' where all are exact, else each precision with its kinds ('bf16 (eval); fp32 (challenge)')."""
    kinds: Dict[str, List[str]] = {}
    for kind in dict.fromkeys(r["kind"] for r in subject.runs):
        kinds.setdefault(subject.precisions[subject.latest(kind)["id"]], []).append(kind)
    if set(kinds) <= {EXACT}:
        return EXACT
    return "; ".join(f"{p} ({', '.join(k)})" for p, k in sorted(kinds.items()))


def preprocessing(subject: Subject) -> dict:
    """What else a row's numbers depend on beyond the model and the data, from its newest run: the
    class map a 1000-class model's outputs were read through (its name, and the sha256 of its table
    as canonical JSON, so two maps that send the same classes to the same labels agree whatever
    their files look like; None for a model with the dataset's own classes), the normalization with
    where it came from (`models.inputs`: model, flags or assumed), and the input size with its resize
    policy. Rows measured under different maps or preprocessing differ here, not only in numbers."""
    import hashlib
    spec = subject.spec
    config = json.loads(subject.runs[-1]["config"] or "{}")
    recorded = config.get("class_map")
    name = digest = None
    if recorded is None and spec.get("label_space") == IMAGENET1K and config.get("classes"):
        from ..class_maps import resolve_class_map
        try:
            recorded = resolve_class_map(config["classes"]).to_config()
        except Exception:  # noqa: BLE001 - a run whose classes no built-in map reads: no map to name
            recorded = None
    if recorded:
        given = (config.get("model_options") or {}).get("class_map")
        name = given["file"] if isinstance(given, dict) else str(recorded["name"]).rsplit("/", 1)[-1]
        table = {str(k): sorted(v) for k, v in recorded["imagenet_classes"].items()}
        digest = hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()
    norm = (spec.get("extra") or {}).get("normalization") or {}
    size = spec.get("input_size") or []
    return {"class_map": name, "class_map_sha256": digest,
            "norm_mean": [float(v) for v in spec.get("mean") or []] or None,
            "norm_std": [float(v) for v in spec.get("std") or []] or None,
            "norm_source": norm.get("source") or "unrecorded",
            "input_size": f"{size[-2]}x{size[-1]}" if len(size) >= 2 else None, "resize": spec.get("resize")}


def category_cells(ctx: ReportContext, subject: Subject) -> Dict[str, Tuple[dict, dict, str]]:
    """The paper's BG Required share (Table 3) of the model's newest eval run, with a Wilson
    interval: the images it gets right only with the right background."""
    from ..errors import BgbenchError
    from ..evaluation.metrics import wilson_interval
    from ..measures.categories.summary import prediction_categories
    run = subject.latest("eval")
    if run is None:
        return {}
    try:
        found = prediction_categories(ctx.store, run["id"])
    except BgbenchError:  # not the variants the categories need (an edit folder, a group dataset)
        return {}
    share, n = found.overall["BG Required"], found.n
    lo, hi = wilson_interval(int(round(share * n)), n)
    column = {"key": "categories:bg_required", "title": "BG Required",
              "description": "share of images right on ORIGINAL and on ONLY-BG-T but wrong on MIXED-RAND: right "
                             "only with the right background (the paper's Table 3)",
              "percent": True, "higher": False}
    return {column["key"]: (column, {"value": share, "lo": lo, "hi": hi, "n": n, "run": run["id"],
                                     "href": f"{ctx.page_of(subject)}#{subject.key}-categories"}, "eval")}


def edit_drop_cells(ctx: ReportContext, subject: Subject) -> Dict[str, Tuple[dict, dict, str]]:
    """On an eval of an edited dataset (ImageNet-E levels), each level's accuracy drop from ORIGINAL
    with its paired bootstrap interval (the edits section's numbers): column key -> (column, cell, 'eval')."""
    from ..measures.edits.summary import edit_drops, edited_levels
    run = subject.latest("eval")
    if not edited_levels(run):
        return {}
    href = f"{ctx.page_of(subject)}#{subject.key}-edits"
    return {f"edits:drop:{d['variant']}": (
        {"key": f"edits:drop:{d['variant']}", "title": f"{d['variant']} drop",
         "description": f"accuracy drop from ORIGINAL when {d['variant']} is applied (paired bootstrap interval)",
         "percent": True, "higher": False},
        {"value": d["drop"], "lo": d["lo"], "hi": d["hi"], "n": d.get("n"), "run": run["id"], "href": href}, "eval")
        for d in (level.to_dict() for level in edit_drops(ctx.store, [run["id"]]).levels)}


def benchmark_cells(ctx: ReportContext, subject: Subject) -> Tuple[Dict[str, Tuple[dict, dict, str]], Tuple[str, ...]]:
    """On a benchmark's own data (its runs record the `data_kind` some measure declares headlines
    for: Hard ImageNet's), those headlines as columns: (column key -> (column, cell, its measure's
    name), the measures whose own headlines they replace). Each cell is the stored metric of the
    model's newest run of its measure, with its interval; n/a with the reason where a study skipped
    the measure. Empty for any other dataset."""
    kinds = {json.loads(r["config"] or "{}").get("data_kind") for r in subject.runs}
    declared = sorted(((b, m) for m in list_measures() for b in m.benchmark_headlines if b.data_kind in kinds),
                      key=lambda bm: bm[0].place)
    found, replaced = {}, []
    for benchmark, measure in declared:
        run = subject.latest(measure.kind)
        for h in measure.headlines_on(benchmark, None if run is None else json.loads(run["config"] or "{}")):
            column = Column(measure, h, (h.variant,))
            value = cell(ctx, subject, column)
            if value is not None:
                meta = column.meta(f"{benchmark.data_kind}:{column.key}")
                found[meta["key"]] = (meta, value, measure.name)
        replaced += [measure.name] if benchmark.replaces else []
    return found, tuple(replaced)


def _dataset_name(subject: Subject) -> str:
    return subject.data_label or (Path(subject.data_root).name if subject.data_root
                                  else (subject.data_fingerprint or "-")[:12])


def _cell_text(column: dict, e: Optional[dict], notes: Optional[List[str]] = None) -> str:
    """A scorecard cell as text: the value and its interval, 'n/a: why' ('n/a [k]' with the reason
    as note k under the table, when `notes` collects them), or '-' when not measured."""
    from ..evaluation.metrics import interval
    if e is None:
        return "-"
    if e.get("na"):
        if notes is None or e.get("run") is not None:
            return e["na"]
        why = e["na"].removeprefix("n/a: ")
        notes += [why] if why not in notes else []
        return f"n/a [{notes.index(why) + 1}]"
    fmt = (lambda v: f"{100 * v:.1f}%") if column["percent"] else (lambda v: f"{v:.3f}")
    ci = interval(e["lo"], e["hi"], e["n"], fmt)
    ref = f"({e['reference']['name']} {fmt(e['reference']['value'])})" if e.get("reference") else ""
    tag = "" if (e.get("precision") or EXACT) == EXACT else f"[{e['precision']}]"  # a reduced-precision run's
    return " ".join(part for part in (fmt(e["value"]), ci, ref, tag) if part)


def scorecard_records(data: dict) -> List[dict]:
    """The scorecard as flat records (one per model, dataset and column), for --json and export."""
    return [{"model": row["label"], "dataset": group["name"], "measure": column["key"], "title": column["title"],
             "value": e["value"], "lo": e["lo"], "hi": e["hi"], "n": e["n"], "not_available": e.get("na"),
             "run": e["run"], "precision": e.get("precision"), "higher_is_better": column["higher"],
             "reference": e.get("reference")}
            for row in data["rows"] for group, cells in zip(data["groups"], row["cells"])
            for column, e in zip(group["columns"], cells) if e is not None]


def scorecard_text(data: dict) -> str:
    """The scorecard as a plain table (what `bgbench profile` and `bgbench study` end with): one
    block per dataset, each measure's headline with its interval. Up to READ_DOWN_UP_TO models,
    a column per model (the measures read down); more models, a row per model."""
    blocks = []
    for gi, group in enumerate(data["groups"]):
        titles = [f"{c['title']} ({'higher' if c['higher'] else 'lower'} is better)" for c in group["columns"]]
        models = [r for r in data["rows"] if any(e is not None for e in r["cells"][gi])]
        if not models:
            continue
        notes: List[str] = []
        cells = [[_cell_text(c, e, notes) for c, e in zip(group["columns"], r["cells"][gi])] for r in models]
        if len(models) <= READ_DOWN_UP_TO:
            table = [["", *[r["label"] for r in models]]] + [[t, *[c[i] for c in cells]] for i, t in enumerate(titles)]
        else:
            table = [["model", *titles]] + [[r["label"], *c] for r, c in zip(models, cells)]
        blocks.append("\n".join([f"scorecard on {group['name']}:", *aligned(table),
                                  *(f"[{k}] skipped: {why}" for k, why in enumerate(notes, 1))]))
    return "\n\n".join(blocks)
