"""The shortcut table: Whac-A-Mole's row per model, beside the Backgrounds Challenge, from stored runs.

Li et al. (CVPR 2023, Table 2) report per model IN-1k accuracy, the IN-W gap, the Carton gap, the
SIN gap, the IN-R gap and the IN-9 gap (mixed_rand - mixed_same). bgbench adds what it measures
of backgrounds: BG-Gap (mixed_same - mixed_rand, the paper's sign), challenge accuracy, and
ImageNet-X's background error ratio. Each number is a stored run's metric with its interval; a
column without a run is a dash.

**Preprocessing.** Whac-A-Mole reads every dataset, IN-9 included, through torchvision's
Resize(256) and CenterCrop(224); the Backgrounds Challenge feeds IN-9's images as they are. Each
column says which it used (`Block.preprocessing`): the ImageNet columns are read with the crop
(ImageNet's images always are), the IN-9 gap too (its own pass, the `in9_gap` measure, not the
eval's BG-Gap negated), and BG-Gap, challenge accuracy and the watermark gap off ImageNet with the
images as the dataset holds them. Each model's own normalization and resize policy follow.

The table has one block per dataset (a study's label for it): ImageNet's val gives the ImageNet
columns, an IN-9-layout dataset (IN-9, Synthetic-9, Whac-A-Mole's copy of IN-9 with only its two
mixed folders) the background columns and its own watermark gap. Its rows are the models, one per
model whatever class map its runs recorded (`model_rows`: the renditions run, scored over ImageNet-R's
200 classes, is the same model's as its eval), under their label, the same everywhere in the report.

**Mitigating one, amplifying another.** When a model was derived from another one in the table (a
last-layer refit, DFR or a linear probe, of its backbone; or a recipe started from its weights, as
recorded in the model's provenance), `changes` gives each shortcut's change from the base to the
derived model on the same images, with a paired 95% interval, and says which shortcuts got worse
where the interval excludes zero (Whac-A-Mole's dilemma, measured).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace, fields
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple
from ...result import Result

from ..registry import AS_HELD, CROP, ShortcutColumn, estimate, list_measures, get_measure


@dataclass(frozen=True)
class Column(ShortcutColumn):
    """A column as the table reads it: a measure's declared `ShortcutColumn` (its `shortcut_columns`)
    and the measure (by name) that declares it."""

    measure: str = ""

    @property
    def kind(self) -> str:
        """The run kind it reads: its measure's, from the registry (a kind is spelt only there)."""
        return get_measure(self.measure).kind

    def reads(self, imagenet: bool) -> bool:
        """Whether it is read on a dataset that is (or is not) ImageNet's own images."""
        return self.data == "any" or (self.data == "imagenet") == imagenet


def columns() -> List[Column]:
    """Every registered measure's shortcut columns, in their declared places (Whac-A-Mole's columns,
    then bgbench's background columns: see the module docstring)."""
    declared = sorted(((c, m.name) for m in list_measures() for c in m.shortcut_columns), key=lambda cm: cm[0].place)
    return [Column(**{f.name: getattr(c, f.name) for f in fields(ShortcutColumn)}, measure=name)
            for c, name in declared]


def is_imagenet(runs: Sequence[Any]) -> bool:
    """Whether a subject's data is ImageNet's own images (as its runs recorded it)."""
    return any(json.loads(r["config"] or "{}").get("data_kind") == "imagenet" and
               len(json.loads(r["config"] or "{}").get("classes") or []) == 1000 for r in runs)


def cell(run: Optional[Any], column: Column, metrics: Callable[[int], Dict[Tuple[str, str], Any]]) -> Optional[dict]:
    """A column's value of one run: value, lo, hi, n and the run (None: no run, or no value)."""
    if run is None:
        return None
    m = estimate(metrics(int(run["id"])).get((column.metric, column.variant)))
    return None if m is None else {**m, "run": int(run["id"])}


@dataclass
class Block:
    """The table's block of one dataset: its columns and one row per model."""

    dataset: str
    imagenet: bool
    columns: List[Column]
    rows: List[dict]  # {"model": label, "key": subject key, "cells": {column key: cell or None}}

    def title(self, column: Column) -> str:
        return column.title if self.imagenet else column.other_title or column.title

    def preprocessing(self, column: Column) -> str:
        """How the column's images reached the model: its own crop, else ImageNet's (every reader of
        ImageNet's images crops), else the images as the dataset holds them."""
        return column.preprocessing or (CROP if self.imagenet else AS_HELD)

    def preprocessing_line(self) -> str:
        """'preprocessing: IN-9 gap: Resize(256), CenterCrop(224); BG-Gap, ...: as the dataset holds
        them', each preprocessing once, in the columns' order."""
        by: Dict[str, List[str]] = {}
        for c in self.columns:
            by.setdefault(self.preprocessing(c), []).append(self.title(c))
        return ("preprocessing: " + "; ".join(f"{', '.join(titles)}: {how}" for how, titles in by.items()) +
                " (then each model's own normalization and resize policy)")


@dataclass
class ShortcutTable(Result):
    blocks: List[Block]
    changes: List[dict] = field(default_factory=list)
    run_id: Optional[int] = None

    def to_dict(self) -> dict:
        return {"datasets": [{"dataset": b.dataset, "imagenet": b.imagenet,
                              "columns": [{"key": c.key, "title": b.title(c), "percent": c.percent,
                                           "higher_is_better": c.higher_is_better,
                                           "preprocessing": b.preprocessing(c)} for c in b.columns],
                              "preprocessing": b.preprocessing_line(), "rows": b.rows} for b in self.blocks],
                "changes": self.changes}

    def table(self) -> List[dict]:
        """One row per model and dataset: the dataset, then the block's row."""
        return [{"dataset": b.dataset, **row} for b in self.blocks for row in b.rows]

    def text(self) -> str:
        if not self.blocks:
            return ("shortcut table: no stored run measures a shortcut; `bgbench probe watermark`, `probe texture`, "
                    "`probe renditions` or `probe imagenet_x` (on ImageNet's val) and `probe in9_gap` (IN-9's "
                    "gap) make one, or a study with those measures")
        lines = ["shortcut table (Whac-A-Mole's columns beside the Backgrounds Challenge; 95% intervals)"]
        for b in self.blocks:
            w = max([len(r["model"]) for r in b.rows] + [5])
            lines += ["", f"{b.dataset}:", f"{'model':<{w}}" + "".join(f"  {b.title(c):>24}" for c in b.columns),
                      *(f"{r['model']:<{w}}" + "".join(f"  {show(r['cells'].get(c.key), c):>24}" for c in b.columns)
                        for r in b.rows), b.preprocessing_line()]
        for ch in self.changes:
            lines += ["", f"{ch['derived']} against {ch['base']} on {ch['dataset']} ({ch['relation']}):",
                      *(f"  {item['title']:<26} {show(item, item['column'], signed=True):>24}  {item['verdict']}"
                        for item in ch["items"]), f"  {ch['summary']}"]
        return "\n".join(lines)


def show(c: Optional[dict], column, signed: bool = False) -> str:
    """A cell as the table prints it: '-12.3% [-15.0, -9.6]', '1.24 [1.10, 1.39]', or '–'."""
    if not c or c.get("value") is None or c["value"] != c["value"]:
        return "–"
    pct = column["percent"] if isinstance(column, dict) else column.percent
    key = column.get("key", "") if isinstance(column, dict) else column.key
    if pct:
        fmt = (lambda v: f"{100 * v:+.1f}") if signed or key.endswith("gap") else (lambda v: f"{100 * v:.1f}")
        head = f"{fmt(c['value'])}%"
    else:
        fmt = (lambda v: f"{v:+.2f}") if signed else (lambda v: f"{v:.2f}")
        head = fmt(c["value"])
    if c.get("lo") is None or c.get("hi") is None or any(isinstance(v, float) and math.isnan(v)
                                                         for v in (c["lo"], c["hi"])):
        return head
    return f"{head} [{fmt(c['lo'])}, {fmt(c['hi'])}]"


def build_blocks(subjects: Sequence[Any], metrics: Callable[[int], Dict[Tuple[str, str], Any]]) -> List[Block]:
    """One block per dataset that has a shortcut measured, in the subjects' order."""
    by_data: Dict[str, List[Any]] = {}
    for s in subjects:
        by_data.setdefault(s.data_label, []).append(s)
    blocks, every = [], columns()
    for dataset, group in by_data.items():
        imagenet = any(is_imagenet(s.runs) for s in group)
        read = [c for c in every if c.reads(imagenet)]
        rows = [{"model": s.label or s.model_label, "key": s.key,
                 "cells": {c.key: cell(s.latest(c.kind), c, metrics) for c in read}} for s in group]
        shortcut = [c for c in read if any(r["cells"][c.key] for r in rows)]
        if not any(c.shortcut for c in shortcut):
            continue  # no shortcut measured on this dataset: the scorecard already shows its accuracy and BG-Gap
        blocks.append(Block(dataset, imagenet, shortcut, rows))
    return blocks


def model_rows(subjects: Sequence[Any]) -> List[Any]:
    """One subject per model on each dataset: the report's subjects of one model (its string, weights,
    normalization and protocol) on one dataset joined, whatever class map each run recorded. A
    measure that scores a subset of the classes records that subset's map (renditions: ImageNet-R's
    200 classes), which makes it a subject of its own, but it is the same model's row."""
    groups: Dict[tuple, List[Any]] = {}
    for s in subjects:
        spec = s.spec
        key = (s.data_label, s.data_fingerprint, s.model, s.weights, s.protocol,
               json.dumps([spec.get("mean"), spec.get("std")]))
        groups.setdefault(key, []).append(s)
    rows = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1:
            rows.append(first)
            continue
        runs = sorted((r for s in group for r in s.runs), key=lambda r: r["id"])  # oldest first, as a subject's
        # the report told the split subjects apart by their key ('m [m2]'); joined, the model's name is enough
        label = first.label if len({s.label for s in group}) == 1 else first.label.removesuffix(f" [{first.key}]")
        rows.append(replace(first, runs=runs, label=label))
    named = [(r.data_label, r.label) for r in rows]
    return [r if named.count((r.data_label, r.label)) == 1 or r.label.endswith(f" [{r.key}]")
            else replace(r, label=f"{r.label} [{r.key}]") for r in rows]  # two models of one name: keyed again
