"""One model's edit drops on several datasets in one table: the ImageNet-E release (its paper's
Table 1: top-1 per level and the drop from the original) beside bgbench's own edits (`bgbench edit`
folders), a row per level and a column group per dataset.

The release's levels carry the names bgbench's own edits give the same level (`data.imagenet_e`),
so `size_0.05` of the release and of an edit folder share a row. Each dataset's drops are its own
(`summary.edit_drops`): a level is paired with the ORIGINAL images of its own dataset only.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from ...data.facts import IMAGENET_E, IMAGENET_E_COLUMN_OF as COLUMN_OF
from ...errors import BgbenchError
from ...evaluation.metrics import REPLICATES
from ...result import Result
from .summary import EditDrops, _pct, edit_drops, level_order, stored_run


@dataclass
class EditsBeside(Result):
    """(dataset name, its drops) per dataset, in the order the runs were given."""

    model: str
    checkpoint_sha256: str | None
    datasets: List[Tuple[str, EditDrops]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"model": self.model, "checkpoint_sha256": self.checkpoint_sha256,
                "datasets": [{"data": name, **drops.to_dict()} for name, drops in self.datasets]}

    def table(self) -> List[dict]:
        """One row per (dataset, level): the dataset's name, the level's accuracy and paired drop."""
        return [{"data": name, **row} for name, drops in self.datasets for row in drops.table()]

    def text(self) -> str:
        by = [{lv.variant: lv for lv in drops.levels} for _, drops in self.datasets]
        variants = level_order(sorted({v for levels in by for v in levels}))
        head = f"{'level':<18}{'Table 1':<22}" + "".join(f"{name[:28]:<30}" for name, _ in self.datasets)
        sub = " " * 40 + "".join(f"{'acc':>7}{'drop':>7}  {'95% interval':<14}" for _ in self.datasets)
        rows = [f"{'original':<18}{'Ori':<22}" + "".join(
            f"{_pct(drops.original.value):>7}{'-':>7}  {'':<14}" for _, drops in self.datasets)]
        cell = lambda lv: (f"{'-':>7}{'-':>7}  {'':<14}" if lv is None else  # noqa: E731
                           f"{_pct(lv.acc.value):>7}{_pct(lv.drop.value):>7}  "
                           f"{'[' + _pct(lv.drop.lo) + ', ' + _pct(lv.drop.hi) + ']':<14}")
        rows += [f"{v:<18}{COLUMN_OF.get(v, ''):<22}" + "".join(cell(levels.get(v)) for levels in by) for v in variants]
        sha = f" ({self.checkpoint_sha256[:12]})" if self.checkpoint_sha256 else ""
        return "\n".join([f"{self.model}{sha}: drop from each dataset's own original (paired), accuracies in %",
                          head, sub, *rows])


def edits_of_runs(store, run_ids: Sequence[int], n_boot: int = REPLICATES, seed: int = 0):
    """The eval runs of one model: its drops (`summary.edit_drops`) when they read one dataset, else
    its drops on each dataset beside each other (`EditsBeside`)."""
    by_data: Dict[str, List[int]] = {}
    models = set()
    for rid in run_ids:
        row = stored_run(store, rid)
        models.add((row["model"], row["checkpoint_sha256"]))
        by_data.setdefault(row["data_root"] or "", []).append(int(rid))
    if len(by_data) <= 1:
        return edit_drops(store, list(run_ids), n_boot=n_boot, seed=seed)
    if len(models) > 1:
        raise BgbenchError(f"runs {', '.join(map(str, run_ids))} are of different models; group them per model")
    datasets = [(_name(store, root, ids), edit_drops(store, ids, n_boot=n_boot, seed=seed))
                for root, ids in by_data.items()]
    return EditsBeside(*models.pop(), datasets)


def _name(store, root: str, run_ids: List[int]) -> str:
    """A dataset's column title: its folder's name, marked where it is the ImageNet-E release."""
    config = json.loads(store.get_run(run_ids[0])["config"] or "{}")
    name = Path(root).name if root else f"run {run_ids[0]}"
    return f"{name} (ImageNet-E release)" if config.get("data_kind") == IMAGENET_E else name
