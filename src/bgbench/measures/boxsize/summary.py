"""Accuracy binned by the share of the image the foreground's box covers (paper Fig. 14)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from ... import checks
from ...data.in9 import discover
from ...errors import BgbenchError
from ...evaluation.metrics import accuracy
from ...store import Store
from ...data.boxes import dataset_boxes
from ...probing.tables import RunTable, stored_table
from ...result import Result


def quantile_bins(shares: np.ndarray, bins: int) -> np.ndarray:
    """Bin edges at the quantiles of `shares` (duplicates merged, so a bin is never empty)."""
    edges = np.unique(np.quantile(shares, np.linspace(0, 1, bins + 1)))
    return edges if len(edges) > 1 else np.array([shares.min(), shares.max()])


def binned_accuracy(shares: np.ndarray, correct: np.ndarray, edges: np.ndarray) -> List[dict]:
    """Accuracy with a Wilson interval in each bin [lo, hi) (the last bin includes hi)."""
    idx = np.clip(np.searchsorted(edges, shares, side="right") - 1, 0, len(edges) - 2)
    out = []
    for b in range(len(edges) - 1):
        sel = correct[idx == b]
        e = accuracy(sel)
        out.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": int(sel.size),
                    "acc": e.value, "acc_lo": e.lo, "acc_hi": e.hi})
    return out


@dataclass
class BoxSizeResult(Result):
    run_id: Optional[int]  # None for a table that was never stored
    curves: Dict[str, List[dict]]
    box_source: str
    n_boxes: int

    def to_dict(self) -> dict:
        return dict(self.curves)

    def table(self) -> List[dict]:
        """One row per variant and bin: the bin's box shares, images and accuracy with its interval."""
        return [{"variant": v, **r} for v, rows in self.curves.items() for r in rows]

    def text(self) -> str:
        of = f"run {self.run_id}" if self.run_id is not None else "the table"
        lines = [f"accuracy by box share of the image, {of} (boxes {self.box_source}, {self.n_boxes})"]
        for v, rows in self.curves.items():
            lines += [f"{v}:", f"  {'box share':>15} {'n':>6} {'acc':>7}  {'95% CI':>17}",
                      *(f"  {100 * r['lo']:5.1f}%-{100 * r['hi']:5.1f}% {r['n']:>6} {100 * r['acc']:6.1f}%  "
                        f"[{100 * r['acc_lo']:5.1f}%, {100 * r['acc_hi']:5.1f}%]" for r in rows)]
        return "\n".join(lines)


def box_size_curve(store: Store, run_id: int, variants: Sequence[str] = ("only_bg_t",), bins: int = 5,
                   data: Optional[str] = None, mapping: Optional[str] = None) -> BoxSizeResult:
    """Per variant of a stored eval run, accuracy in `bins` quantile bins of box area / image area.

    Boxes come from the run's dataset (its data_root, or `data`): recorded, or recovered.
    """
    checks.at_least("--bins", bins, 1)
    return box_size_of(stored_table(store, run_id, mapping=mapping, variants=variants), variants, bins, data)


def box_size_of(table: RunTable, variants: Sequence[str] = ("only_bg_t",), bins: int = 5,
                data: Optional[str] = None) -> BoxSizeResult:
    """Per variant of a per-image table, accuracy in `bins` quantile bins of box area / image area.

    Boxes come from the table's dataset (its data root, or `data`): recorded, or recovered.
    """
    checks.at_least("--bins", bins, 1)
    root = data or table.data_root
    if not root:
        raise BgbenchError(f"{table.name} records no data root; pass --data ROOT")
    table.require(variants, "box-size curves bin the variants asked for")
    layout = discover(root, split=table.split, variants=["original"])
    boxes, sizes, source = dataset_boxes(layout)
    curves = {}
    for v in variants:
        p = table.variants[v]
        keep = [k for k, i in enumerate(p.image_ids) if i in boxes and i in sizes]
        if not keep:
            raise BgbenchError(f"no image of variant {v} in {table.name} has a box in {root}")
        share = np.array([_share(boxes[p.image_ids[k]], sizes[p.image_ids[k]]) for k in keep])
        curves[v] = binned_accuracy(share, p.correct[keep], quantile_bins(share, bins))
    return BoxSizeResult(table.run_id, curves, source, len(boxes))


def _share(box, size) -> float:
    h, w = size
    return (box[2] - box[0]) * (box[3] - box[1]) / float(h * w)
