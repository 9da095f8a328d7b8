"""ImageNet-E's metric: the drop in top-1 accuracy from `original` per attribute level.

A pure function of stored eval predictions: every level folder of an edit dataset (see
`bgbench edit`) is a variant of the eval run, and its drop is paired over the image ids that
both it and `original` hold (a rejected edit leaves an image out of that level only).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

from ...errors import BgbenchError
from ...evaluation.metrics import Estimate, accuracy, paired, paired_difference
from ...evaluation.metrics import REPLICATES
from ...store import Store
from ...probing.tables import RunTable, stored_table
from ...result import Result

ORIGINAL = "original"
#: ImageNet-E's attributes in the order tables show them; 'background' is the release's random
#: background (`data.imagenet_e`), which `bgbench edit` does not make.
ATTRIBUTE_ORDER = ("remove", "size", "position", "rotation", "complexity", "background")


@dataclass(frozen=True)
class LevelDrop:
    attribute: str
    level: str
    variant: str
    acc: Estimate  # accuracy on the edited level (Wilson interval)
    drop: Estimate  # acc(original) - acc(level), paired over shared images (bootstrap interval)

    def to_dict(self) -> dict:
        return {"attribute": self.attribute, "level": self.level, "variant": self.variant, "acc": self.acc.value,
                "drop": self.drop.value, "lo": self.drop.lo, "hi": self.drop.hi, "n": self.drop.n}


@dataclass
class EditDrops(Result):
    model: str
    checkpoint_sha256: str | None
    run_ids: List[int]
    original: Estimate
    levels: List[LevelDrop] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"model": self.model, "checkpoint_sha256": self.checkpoint_sha256, "run_ids": self.run_ids,
                "original": self.original.as_dict(), "levels": [lv.to_dict() for lv in self.levels]}

    def table(self) -> List[dict]:
        """One row per edit level: its accuracy and its paired drop from ORIGINAL."""
        return [lv.to_dict() for lv in self.levels]

    def text(self) -> str:
        sha = f" ({self.checkpoint_sha256[:12]})" if self.checkpoint_sha256 else ""
        return "\n".join([
            f"{self.model}{sha}, run {', '.join(map(str, self.run_ids))}: original {100 * self.original.value:.1f}% "
            f"(n={self.original.n})",
            f"{'attribute':<12}{'level':<12}{'acc':>8}{'drop':>8}  {'95% interval':<16}{'n':>6}",
            *(f"{lv.attribute:<12}{lv.level:<12}{_pct(lv.acc.value):>8}{_pct(lv.drop.value):>8}  "
              f"{'[' + _pct(lv.drop.lo) + ', ' + _pct(lv.drop.hi) + ']':<16}{lv.drop.n:>6}" for lv in self.levels)])


def _pct(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def split_level(variant: str) -> Tuple[str, str]:
    """'size_0.05' -> ('size', '0.05'); 'remove' -> ('remove', ''); other folders keep their name."""
    head, _, tail = variant.partition("_")
    return (head, tail) if head in ATTRIBUTE_ORDER else (variant, "")


def _sort_key(variant: str):
    a, level = split_level(variant)
    rank = ATTRIBUTE_ORDER.index(a) if a in ATTRIBUTE_ORDER else len(ATTRIBUTE_ORDER)
    try:
        num = (0, -float(level)) if a == "size" else (0, float(level))
    except ValueError:
        num = (1, 0.0) if level not in ("full",) else (-1, 0.0)
    return rank, a, num, level


def level_order(variants: Sequence[str]) -> List[str]:
    """Edit levels in the order tables show them: by attribute (ImageNet-E's order), then level."""
    return sorted(variants, key=_sort_key)


def edited_levels(run) -> List[str]:
    """The edit levels of an eval run of an edit dataset (`bgbench edit`), in `level_order`; none for
    any other run (or no run): it needs ORIGINAL and one level at least."""
    from ...edits.registry import ATTRIBUTES
    variants = (json.loads(run["config"]).get("variants") or []) if run is not None else []
    return level_order([v for v in variants if split_level(v)[0] in ATTRIBUTES]) if ORIGINAL in variants else []


def stored_run(store: Store, rid: int):
    """Stored run `rid`'s row, or one line saying there is none."""
    row = store.get_run(int(rid))
    if row is None:
        raise BgbenchError(f"RUN {rid}: no such run in {store.path}")
    return row


def _merged_table(store: Store, run_ids: Sequence[int]) -> RunTable:
    """One table from the eval runs of one model (its levels may be spread over several runs)."""
    rows = []
    for rid in run_ids:
        row = stored_run(store, rid)
        if row["kind"] != "eval":
            raise BgbenchError(f"RUN {rid} is a run of kind {row['kind']!r}; analyze edits reads eval runs of an edit "
                               f"folder")
        rows.append(row)
    models = {(r["model"], r["checkpoint_sha256"]) for r in rows}
    if len(models) > 1:
        raise BgbenchError(f"runs {', '.join(map(str, run_ids))} are of different models; group them per model")
    variants = {}
    for rid in run_ids:
        for v, p in stored_table(store, rid).variants.items():
            if v in variants:
                raise BgbenchError(f"runs {', '.join(map(str, run_ids))} both hold {v}/{p.image_ids[0]}; "
                                   f"pass one eval run per edit folder")
            variants[v] = p
    model, sha = models.pop()
    return RunTable(variants, run_id=int(run_ids[0]) if len(run_ids) == 1 else None, model=model,
                    checkpoint_sha256=sha)


def edit_drops(store: Store, run_ids: Sequence[int], n_boot: int = REPLICATES, seed: int = 0) -> EditDrops:
    """Accuracy drop from `original` per edit level, for the eval runs `run_ids` of one model."""
    drops = edit_drops_of(_merged_table(store, run_ids), n_boot=n_boot, seed=seed)
    drops.run_ids = [int(r) for r in run_ids]
    return drops


def edit_drops_of(table: RunTable, n_boot: int = REPLICATES, seed: int = 0) -> EditDrops:
    """Accuracy drop from `original` per edit level of a per-image table (one variant per level)."""
    correct = {v: p.correct_by_id() for v, p in table.variants.items()}
    if ORIGINAL not in correct:
        raise BgbenchError(f"{table.name} has no '{ORIGINAL}' predictions to compare with")
    original = accuracy(list(correct[ORIGINAL].values()))
    # each level's drop is paired over the images that both it and ORIGINAL hold
    levels = [LevelDrop(*split_level(v), v, accuracy(list(correct[v].values())),
                        paired_difference(*paired(correct[ORIGINAL], correct[v]), n_boot=n_boot, seed=seed))
              for v in sorted((v for v in correct if v != ORIGINAL), key=_sort_key)]
    return EditDrops(table.model or "", table.checkpoint_sha256, [table.run_id] if table.run_id is not None else [],
                     original, levels)


def runs_by_model(store: Store, run_ids: Sequence[int]) -> List[List[int]]:
    """`run_ids` grouped by model and weights, in order: one group per model whose edits are compared."""
    groups: Dict[tuple, List[int]] = {}
    for rid in run_ids:
        row = stored_run(store, rid)
        groups.setdefault((row["model"], row["checkpoint_sha256"]), []).append(int(rid))
    return list(groups.values())
