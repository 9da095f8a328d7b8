"""Whether fixing one shortcut worsened another: each shortcut's change from a base model to a model
derived from it, on the same images, with a paired 95% interval.

A model is derived from another when its provenance says so: a last-layer refit (`bgbench train
--recipe dfr` or `linear-probe`) records its backbone and the backbone's weights
(`spec.extra['last_layer']`); a recipe started from a checkpoint records it (`spec.extra['init_sha256']`).

Each change is derived minus base, per column of the shortcut table, paired over images:
- a gap (IN-W, Carton, SIN, IN-R, IN-9; its measure's `gap_arms`): per image, (shifted - reference
  correctness) of the derived model minus the base's, bootstrapped over the images (each arm on its
  own where the arms hold different images, ImageNet-R);
- any other column by the function it declares (`ShortcutColumn.change`): an accuracy (IN-1k,
  challenge) per image, correct(derived) - correct(base); BG-Gap per foreground, as `bgbench
  compare` computes the BG-Gap difference; ImageNet-X's background error ratio, both ratios on the
  same resampled images.
A change "made worse" a shortcut when its interval excludes zero in the direction the column calls
worse (a gap further below zero, a BG-Gap or error ratio higher).
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import BgbenchError
from ...evaluation.metrics import paired_difference, unpaired_difference
from ..gaps import stem
from ..registry import get_measure, resolve
from .table import Column, columns, is_imagenet


def parent_of(spec: dict) -> Optional[Tuple[Optional[str], Optional[str], str]]:
    """(base model string, base weights sha256, how it was derived) of a model's spec, or None."""
    extra = spec.get("extra") or {}
    head = extra.get("last_layer")
    if isinstance(head, dict) and (head.get("backbone") or head.get("backbone_sha256")):
        return head.get("backbone"), head.get("backbone_sha256"), f"{head.get('recipe', 'last-layer')} of its backbone"
    if extra.get("init_sha256"):
        return None, extra["init_sha256"], "trained from its weights"
    return None


def derived_pairs(subjects: Sequence[Any]) -> List[Tuple[Any, Any, str]]:
    """(base, derived, relation) for every subject whose model derives from another subject's on the
    same dataset."""
    pairs = []
    for d in subjects:
        found = parent_of(d.spec) if d.runs else None
        if found is None:
            continue
        name, sha, relation = found
        for b in subjects:
            if b is d or b.data_label != d.data_label:
                continue
            if (sha and b.weights == sha) or (not sha and name and b.model == name):
                pairs.append((b, d, relation))
                break
    return pairs


def gap_change(store, base_run: int, derived_run: int, measure: str, label: Optional[int], seed: int
               ) -> Optional[dict]:
    """The change of a gap measure's gap (derived - base), paired over images (see the docstring)."""
    declared = get_measure(measure)
    table, arms_of = declared.table.name, declared.gap_arms
    ref, shifted = arms_of.reference, arms_of.shifted
    key = stem if arms_of.key == "stem" else str
    per_model = []
    for run in (base_run, derived_run):
        arms: Dict[str, Dict[str, bool]] = {ref: {}, shifted: {}}
        for r in store.probe_rows(table, run):
            if r["arm"] in arms and (label is None or int(r["label"]) == label):
                arms[r["arm"]][key(r["image_id"])] = r["pred"] == r["label"]
        per_model.append(arms)
    (b, d) = per_model
    for arm in (ref, shifted):
        if set(b[arm]) != set(d[arm]):
            raise BgbenchError(f"runs {base_run} and {derived_run} are not on the same images ({arm})")
    if not b[ref] or not b[shifted]:
        return None
    ids_ref, ids_sh = sorted(b[ref]), sorted(b[shifted])
    diff_ref = np.array([float(d[ref][i]) - float(b[ref][i]) for i in ids_ref])
    diff_sh = np.array([float(d[shifted][i]) - float(b[shifted][i]) for i in ids_sh])
    return (paired_difference if ids_ref == ids_sh else unpaired_difference)(diff_sh, diff_ref, seed=seed).as_dict()


def column_change(store, column: Column, base_run: int, derived_run: int, seed: int = 0) -> Optional[dict]:
    """One column's change from the base's run to the derived model's run of its kind: by the
    function the column declares, else as its measure's gap (on the one class its `class_of` names,
    where it names one)."""
    if column.change is not None:
        return resolve(column.change)(store, column, base_run, derived_run, seed)
    label = None
    if column.class_of is not None:
        named = json.loads(store.get_run(base_run)["config"]).get(column.class_of)
        if not named:
            return None
        label = int(named["label"])
    return gap_change(store, base_run, derived_run, column.measure, label, seed)


def verdict(change: dict, column: Column) -> str:
    """'worse', 'better' or 'no clear change', by where the interval lies against the column's
    direction (see the docstring)."""
    lo, hi = change.get("lo"), change.get("hi")
    if lo is None or hi is None or lo != lo or hi != hi or lo <= 0 <= hi:
        return "no clear change"
    return "better" if (lo > 0) == column.higher_is_better else "worse"


def changes(store, subjects: Sequence[Any], seed: int = 0) -> List[dict]:
    """Every (base, derived) pair's changes, per column both have a run of (see the docstring)."""
    out = []
    for base, derived, relation in derived_pairs(subjects):
        imagenet = is_imagenet(base.runs)
        items = []
        for c in (c for c in columns() if c.reads(imagenet)):
            rb, rd = base.latest(c.kind), derived.latest(c.kind)
            if rb is None or rd is None:
                continue
            try:
                change = column_change(store, c, int(rb["id"]), int(rd["id"]), seed)
            except BgbenchError:
                continue  # runs on other images: the table shows both, no paired change
            if change is None:
                continue
            title = c.title if imagenet else c.other_title or c.title
            items.append({**change, "key": c.key, "title": title, "verdict": verdict(change, c),
                          "column": {"percent": c.percent}})
        if not items:
            continue
        worse = [i["title"] for i in items if i["verdict"] == "worse"]
        better = [i["title"] for i in items if i["verdict"] == "better"]
        summary = "; ".join(filter(None, [
            f"improved: {', '.join(better)}" if better else "",
            f"made worse: {', '.join(worse)}" if worse else "no shortcut got clearly worse"]))
        out.append({"base": base.label or base.model_label, "derived": derived.label or derived.model_label,
                    "dataset": base.data_label, "relation": relation, "items": items, "summary": summary,
                    "worse": worse, "better": better})
    return out
