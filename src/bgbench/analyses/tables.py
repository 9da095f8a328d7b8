"""Reading an eval run's stored predictions back, torch-free, optionally under another mapping.

Predict once, analyse many times: every analysis here starts from these arrays, never a model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..classes import Mapping, decide_stored
from ..errors import BgbenchError, with_article
from ..store import Store


@dataclass
class StoredVariant:
    """One variant of a stored run: per-image ids, labels and predictions (sorted by image id)."""

    image_ids: List[str]
    labels: np.ndarray
    preds: np.ndarray
    conf: np.ndarray

    @property
    def correct(self) -> np.ndarray:
        return self.preds == self.labels

    def by_id(self) -> Dict[str, int]:
        return {i: k for k, i in enumerate(self.image_ids)}


def run_row(store: Store, run_id: int, kinds: Sequence[str] = ("eval",)):
    """The run's row; a one-line error when it does not exist or is of another kind."""
    row = store.get_run(int(run_id))
    if row is None:
        raise BgbenchError(f"run {run_id} not found in {store.path} (see `bgbench runs`)")
    if row["kind"] not in kinds:
        raise BgbenchError(f"run {run_id} is {with_article(row['kind'])} run; this needs "
                           f"{with_article(' or '.join(kinds))} run")
    return row


def run_config(row) -> dict:
    return json.loads(row["config"]) if row["config"] else {}


def run_classes(row) -> List[str]:
    return list(run_config(row).get("classes") or [])


def stored_predictions(store: Store, run_id: int, mapping: Optional[str] = None,
                       variants: Optional[Sequence[str]] = None) -> Dict[str, StoredVariant]:
    """Per-variant predictions of eval run `run_id`.

    Args:
        mapping: None keeps the stored decisions; 'argmax' or 'superclass' re-decides a
            1000-class run from its stored top-5 and superclass sums, with no inference.
    """
    run_row(store, run_id)
    out: Dict[str, StoredVariant] = {}
    for v in variants or _variants(store, run_id):
        rows = store.predictions(run_id, v)
        if not rows:
            raise BgbenchError(f"run {run_id} has no predictions for variant {v!r} "
                               f"(stored: {', '.join(_variants(store, run_id)) or 'none'})")
        ids = [r["image_id"] for r in rows]
        labels = np.fromiter((r["label"] for r in rows), np.int64, len(rows))
        preds = np.fromiter((r["pred"] for r in rows), np.int64, len(rows))
        conf = np.fromiter((r["confidence"] for r in rows), np.float64, len(rows))
        if mapping is not None:
            preds, conf = redecide(rows, mapping, run_id)
        out[v] = StoredVariant(ids, labels, preds, conf)
    return out


def redecide(rows, mapping: str, run_id: int = 0):
    """(pred, conf) of stored prediction rows under `mapping` (1000-class runs only)."""
    if any(r["superclass_probs"] is None or r["top5_classes"] is None for r in rows):
        raise BgbenchError(f"run {run_id} stored no raw 1000-class outputs (top-5 and superclass sums), "
                           f"so --mapping {mapping} cannot be applied without inference")
    top_c = np.array([json.loads(r["top5_classes"]) for r in rows], dtype=np.int64)
    top_p = np.array([json.loads(r["top5_probs"]) for r in rows], dtype=np.float64)
    sums = np.array([json.loads(r["superclass_probs"]) for r in rows], dtype=np.float64)
    pred, conf = decide_stored(top_c, top_p, sums, Mapping(mapping))
    return pred.astype(np.int64), conf.astype(np.float64)


def _variants(store: Store, run_id: int) -> List[str]:
    return [r[0] for r in store.conn.execute(
        "SELECT DISTINCT variant FROM predictions WHERE run_id=? ORDER BY variant", (run_id,))]
