"""The report's sections: a registry of functions from the store to template data.

Most sections belong to a measure: its package draws them (`measures/<name>/section.py`) and its
declaration lists them (`Measure.sections`), and this module registers them from the Measure
registry, in the measures' declared order (`Measure.position`). The page's own sections (the
overview, each model's provenance, the comparisons across models) are registered here with `@register_section(name, title, scope)`.

A section is rendered by its template, `sections/<name>.html.j2` (among the report's templates,
in its measure's `templates/` folder, or given inline in its `SectionSpec`), which receives the
returned dict as `data` (and `subject` for per-model sections). A section function returns None
when nothing it needs is recorded, and the page then leaves it out: a report shows what was
measured, nothing else.

Scopes:
- "summary": `fn(ctx)`, at the top of the page;
- "model": `fn(ctx, subject)`, once per model, in registration order;
- "page": `fn(ctx)`, after the models (comparisons across models).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations
from typing import Callable, Dict, List, Optional

from ..errors import BgbenchError
from ..comparing import compare_runs
from ..measures.eval.section import estimate, eval_accuracies
from ..measures.registry import Measure, SectionSpec, list_measures, resolve
from .context import ReportContext, Subject
from .scorecard import WORST_GROUP, cell, columns, provenance, scorecard

SCOPES = ("summary", "model", "page")


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    scope: str
    fn: Callable[..., Optional[dict]]
    after: Optional[str] = None  # shown right after this section (a gallery after its numbers)
    measure: Optional[Measure] = None  # the measure that supplies it (None: one of the page's own)
    source: Optional[str] = None  # the template's source, when its measure gives it inline

    @property
    def template(self) -> str:
        return f"sections/{self.name}.html.j2"


SECTIONS: Dict[str, Section] = {}


def register_section(name: str, title: str, scope: str = "model"):
    """Register one of the page's own section functions under `name` (its template is
    sections/<name>.html.j2); they come in registration order."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}")

    def wrap(fn):
        if name in SECTIONS:
            raise ValueError(f"section {name!r} is already registered")
        SECTIONS[name] = Section(name, title, scope, fn)
        return fn
    return wrap


def _measure_section(measure: Measure, spec: SectionSpec) -> Section:
    """A measure's section, its function imported when the report first calls it."""
    return Section(spec.name, spec.title, spec.scope, lambda *args: resolve(spec.function)(*args),
                   spec.after, measure, spec.template)


def measure_sections() -> List[Section]:
    """Every registered measure's sections, in their declared order (read afresh: a measure registered
    later, such as a test's, is on the next page)."""
    return [_measure_section(m, spec) for m in list_measures() for spec in m.sections]


def list_sections(scope: Optional[str] = None) -> List[Section]:
    """Sections in page order: registration order, each `after` one right behind its anchor (and
    behind what was placed there before it); one whose anchor is not registered comes last."""
    every = ([s for s in SECTIONS.values() if s.scope == "summary"] + measure_sections()
             + [s for s in SECTIONS.values() if s.scope != "summary"])
    names = [s.name for s in every]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"report sections registered twice: {', '.join(duplicated)}")
    behind: Dict[Optional[str], List[Section]] = {}  # anchor -> the sections placed behind it, in order
    for s in every:
        behind.setdefault(s.after, []).append(s)
    ordered: List[Section] = []

    def place(sections: List[Section]) -> None:
        for s in sections:
            ordered.append(s)
            place(behind.get(s.name, []))
    place(behind.get(None, []) + [s for s in every if s.after is not None and s.after not in names])
    ordered += [s for s in every if s not in ordered]  # anchors that name each other in a circle
    return [s for s in ordered if scope is None or s.scope == scope]


def _trained(subject: Subject) -> Optional[dict]:
    """How bgbench trained the model: its training run's config, or what its checkpoint records
    where that run is in another store; None for a model bgbench did not train."""
    if subject.train_run is not None:
        return json.loads(subject.train_run["config"])
    return (subject.spec.get("extra") or {}).get("trained") or None


def _training_summary(subject: Subject) -> Optional[str]:
    """'mixed_rand, bgswap + SWA': what a bgbench-trained model was trained on, in a few words."""
    cfg = _trained(subject)
    return None if not cfg else (", ".join(str(cfg[k]) for k in ("variant", "recipe") if cfg.get(k))
                                 + (" + SWA" if cfg.get("swa") else ""))


# ---------------------------------------------------------------- summary


#: Where the report puts its scorecard's files (`reporting.export`), which the scorecard links.
SCORECARD_FILES = "scorecard"


@register_section("scorecard", "Scorecard", scope="summary")
def scorecard_section(ctx: ReportContext) -> Optional[dict]:
    """The scorecard, and beside it the same numbers as files to publish (scorecard.csv and one
    model_info JSON per model and dataset, as `bgbench export --scorecard` writes them)."""
    from .export import write_scorecard
    data = scorecard(ctx)
    if data is None:
        return None
    written = write_scorecard(data, ctx.out / SCORECARD_FILES)
    data["files"] = {"csv": f"{SCORECARD_FILES}/{written['csv']}", "model_info": f"{SCORECARD_FILES}/model_info/",
                     "count": len(written["model_info"])}
    for row in data["rows"]:
        row["json"] = [f"{SCORECARD_FILES}/{written['of'][(row['label'], g['key'])]}"
                       if (row["label"], g["key"]) in written["of"] else None for g in data["groups"]]
    return data


@register_section("overview", "Models", scope="summary")
def overview(ctx: ReportContext) -> Optional[dict]:
    rows = []
    for s in ctx.subjects:
        acc = eval_accuracies(ctx, s)
        chal = s.latest("challenge")
        cm = ctx.metrics(chal["id"]) if chal is not None else {}
        rows.append({"subject": s, "original": (acc or {}).get("accuracy", {}).get("original"),
                     "bg_gap": (acc or {}).get("bg_gap"), "challenge": estimate(cm.get(("challenge_accuracy", ""))),
                     "worst_group": _worst_group(ctx, s), "runs": len(s.runs), "trained": _training_summary(s)})
    return {"rows": rows}


def _worst_group(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    """The newest eval run's worst-group accuracy, as the scorecard shows it: MIXED-RAND's (class,
    background class) groups, or a group dataset's own (on ORIGINAL); None when it recorded none."""
    if subject.latest("eval") is None:
        return None
    return cell(ctx, subject, next(c for c in columns() if c.headline is WORST_GROUP))


# ---------------------------------------------------------------- per model


@register_section("provenance", "Provenance")
def provenance_section(ctx: ReportContext, subject: Subject) -> Optional[dict]:
    spec = subject.spec
    runs = [{"id": r["id"], "kind": r["kind"], "created": r["created"], "seed": r["seed"], "version": r["version"]}
            for r in subject.runs]
    t, cfg = subject.train_run, _trained(subject)  # no run: it is in another store, and the checkpoint says
    training = None if not cfg else {
        "run_id": None if t is None else t["id"], "recipe": cfg.get("recipe"),
        "data": None if t is None else cfg.get("data"), "variant": cfg.get("variant"), "epochs": cfg.get("epochs"),
        "swa": cfg.get("swa"), "seed": cfg.get("seed") if t is None else t["seed"],
        "train_accuracy": None if t is None else (ctx.metrics(t["id"]).get(("train_accuracy", ""))
                                                   or {"value": None})["value"]}
    # the scorecard row's provenance (weights, class map, precision, protocol, data, versions), and more of the model
    return {**provenance(subject), "arch": spec.get("arch"), "label_space": spec.get("label_space"),
            "checkpoint": spec.get("checkpoint"), "format": _format_of(spec), "mean": spec.get("mean"),
            "std": spec.get("std"), "norm_source": norm_source(spec), "input": _input_of(spec),
            "zero_shot": _zero_shot_of(spec), "runs": runs, "training": training}


def norm_source(spec: dict) -> Optional[str]:
    """Where a model's mean and std came from, as the run recorded it ('from the model', 'from
    --mean/--std', 'assumed: its ONNX metadata has no mean/std'); None when the run does not say."""
    record = (spec.get("extra") or {}).get("normalization") or {}
    source = record.get("source")
    if source == "assumed":
        return f"assumed ({record.get('why') or 'the model does not say it'}; --mean/--std give it)"
    if source == "flags":
        return f"from {record.get('flag')}"
    return "from the model" if source == "model" else None


def _input_of(spec: dict) -> Optional[str]:
    """'224x224, resize native (bicubic)': the input size and how images meet it."""
    size = spec.get("input_size")
    if not size:
        return None
    return (f"{size[-2]}x{size[-1]}, resize {spec.get('resize', 'none')}"
            + (f" ({spec.get('interpolation')})" if spec.get("resize") == "native" else ""))


def _format_of(spec: dict) -> Optional[str]:
    """How the model was read and run ('safetensors', 'export', 'onnx: onnxruntime 1.20, opset 18,
    CPUExecutionProvider'); None when the run does not say."""
    extra = spec.get("extra") or {}
    fmt = extra.get("format")
    runtime = extra.get("onnx") if fmt == "onnx" else None
    if not fmt or not runtime:
        return fmt
    opset = (runtime.get("opset") or {}).get("")
    parts = [f"onnxruntime {runtime.get('onnxruntime')}", f"opset {opset}" if opset else None,
             "providers " + ", ".join(runtime.get("providers") or [])]
    return f"{fmt}: {', '.join(p for p in parts if p)}"


def _zero_shot_of(spec: dict) -> Optional[str]:
    """A zero-shot head in one line: label set, how many class names and templates, the logit scale."""
    zs = (spec.get("extra") or {}).get("zero_shot")
    if not zs:
        return None
    return (f"{zs.get('label_set')} labels: {len(zs.get('class_names') or [])} class names x "
            f"{len(zs.get('template_texts') or [])} templates ({zs.get('templates')}), logit scale "
            f"{zs.get('logit_scale'):.4g}")


# ---------------------------------------------------------------- across models


def _compare_pair(ctx: ReportContext, a: Subject, b: Subject) -> Optional[dict]:
    """Both subjects' newest eval runs, and newest challenge runs, through `compare_runs`: the same
    function, rule and numbers as `bgbench compare A B`. A pair it refuses shows its reason."""
    found = {"a": a, "b": b, "variants": [], "bg_gap": None, "challenge": None, "refused": [], "runs": {}}
    for kind in ("eval", "challenge"):
        ra, rb = a.latest(kind), b.latest(kind)
        if ra is None or rb is None:
            continue
        found["runs"][kind] = (ra["id"], rb["id"])
        try:
            comparison = compare_runs(ctx.store, ra["id"], rb["id"])
        except BgbenchError as e:
            found["refused"].append(str(e))
            continue
        if kind == "eval":  # its table: a row per variant
            found["variants"] = comparison.table()
            found["bg_gap"] = comparison.bg_gap_diff.as_dict() if comparison.bg_gap_diff is not None else None
        else:  # a challenge comparison's table is its one row
            found["challenge"] = comparison.table()[0]
    return found if found["variants"] or found["challenge"] is not None or found["refused"] else None


#: Up to this many models on one dataset, the page compares every pair; with more, each model with
#: the first (the pairs would grow with the square of the models).
ALL_PAIRS_UP_TO = 4


@register_section("comparisons", "Comparisons on the same data", scope="page")
def comparisons(ctx: ReportContext) -> Optional[dict]:
    """Pairs of models on one dataset (same fingerprint), paired tests on the same images: every
    pair of up to ALL_PAIRS_UP_TO models, or each later model against the first of more."""
    by_data: Dict[str, List[Subject]] = {}
    for s in ctx.subjects:
        by_data.setdefault(s.data_fingerprint or "", []).append(s)
    pairs, baselines = [], []
    for fp, subjects in by_data.items():
        few = len(subjects) <= ALL_PAIRS_UP_TO
        if not few:
            baselines.append({"subject": subjects[0], "models": len(subjects), "data_root": subjects[0].data_root})
        for a, b in combinations(subjects, 2) if few else ((subjects[0], b) for b in subjects[1:]):
            found = _compare_pair(ctx, a, b)
            if found is not None:
                pairs.append({**found, "data_root": a.data_root, "data_fingerprint": fp})
    return {"pairs": pairs, "baselines": baselines, "all_pairs_up_to": ALL_PAIRS_UP_TO} if pairs else None
