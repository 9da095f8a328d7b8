"""The per-image table every analysis reads: an eval run's predictions, torch-free, optionally
re-decided under another mapping, from the store (`stored_table`) or from memory (`as_table`).

Predict once, analyse many times: every analysis starts from these arrays, never a model. The
analyses are pure functions of a `RunTable`; their stored-run entry points read one here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..classes import ClassMap, Mapping, imagenet_to_in9, stores_sums
from ..errors import BgbenchError


def decide_stored(top5_classes: np.ndarray, top5_probs: np.ndarray, superclass_probs: np.ndarray,
                  mapping: Mapping | str, class_map: Optional[ClassMap] = None) -> tuple:
    """Re-decide stored 1000-class outputs without inference: (pred, conf), as `map_logits` gives.

    argmax maps the stored top-1 ImageNet class through the class map (conf: its probability);
    superclass takes the argmax of the stored per-class probability sums (conf: that sum). Under a
    one-to-one map (Full-IN's identity, `stores_sums` False) no sums are stored: there the two rules
    are the same decision.
    """
    if Mapping(mapping) is Mapping.ARGMAX or not stores_sums(class_map):
        table = imagenet_to_in9() if class_map is None else class_map.array()
        return table[np.asarray(top5_classes, dtype=np.int64)[:, 0]], np.asarray(top5_probs)[:, 0]
    sums = np.asarray(superclass_probs, dtype=np.float64)
    return sums.argmax(axis=1), sums.max(axis=1)


@dataclass
class StoredVariant:
    """One variant of a stored run: per-image ids, labels and predictions (sorted by image id).

    `raw` is the top-1 ImageNet class of a 1000-class model (None when the run stored no raw
    outputs): the IN-9 decision maps 630 classes to -1, so two -1 predictions may still be two
    different classes, and only `raw` can tell.
    """

    image_ids: List[str]
    labels: np.ndarray
    preds: np.ndarray
    conf: np.ndarray
    raw: Optional[np.ndarray] = None

    @property
    def correct(self) -> np.ndarray:
        return self.preds == self.labels

    def by_id(self) -> Dict[str, int]:
        return {i: k for k, i in enumerate(self.image_ids)}

    def correct_by_id(self) -> Dict[str, bool]:
        return dict(zip(self.image_ids, self.correct.tolist()))


@dataclass
class RunTable:
    """The per-image rows of one eval run (variant -> predictions) and what analyses need to know of it.

    Attributes:
        classes: the dataset's class folders (label i is classes[i]); empty when unknown.
        run_id: the stored run the rows come from (None for a table held in memory).
        data_root, split: the dataset, for analyses that read it again (box sizes).
    """

    variants: Dict[str, StoredVariant]
    classes: List[str] = field(default_factory=list)
    run_id: Optional[int] = None
    model: Optional[str] = None
    checkpoint_sha256: Optional[str] = None
    data_root: Optional[str] = None
    data_fingerprint: Optional[str] = None
    split: str = "val"

    @property
    def name(self) -> str:
        """How messages name it: 'run 3', or 'the table' when it was never stored."""
        return f"run {self.run_id}" if self.run_id is not None else "the table"

    def require(self, variants: Sequence[str], purpose: str) -> None:
        """A one-line error naming the missing variants, and why they are needed."""
        missing = [v for v in variants if v not in self.variants]
        if missing:
            raise BgbenchError(f"{self.name} has no predictions for {', '.join(missing)} "
                               f"(it holds: {', '.join(self.variants) or 'none'}); {purpose}")


def stored_table(store, run_id: int, mapping: Optional[str] = None,
                 variants: Optional[Sequence[str]] = None) -> RunTable:
    """The table of eval run `run_id`: `variants` (those of them it holds; default all), under
    `mapping` (None: the stored decisions)."""
    row = store.run_row(run_id)
    present = store.run_variants(run_id)
    chosen = [v for v in (variants or present) if v in present]
    config = run_config(row)
    return RunTable(stored_predictions(store, run_id, mapping=mapping, variants=chosen) if chosen else {},
                    classes=list(config.get("classes") or []), run_id=int(run_id), model=row["model"],
                    checkpoint_sha256=row["checkpoint_sha256"], data_root=row["data_root"],
                    data_fingerprint=row["data_fingerprint"], split=config.get("split", "val"))


def as_table(source: Any, mapping: Optional[str] = None, classes: Optional[Sequence[str]] = None) -> RunTable:
    """A `RunTable` from what an analysis was given in memory.

    Args:
        source: a `RunTable`; an evaluation result (`bgbench.evaluate`'s report: its predictions and
            provenance); or a mapping variant -> per-image predictions (objects with `image_ids`,
            `labels` and `preds`, or sequences of (image_id, label, pred) rows).
        mapping: re-decide 1000-class predictions that kept their raw outputs (None: as they are).
        classes: the class folder names, when `source` does not say.
    """
    if isinstance(source, RunTable):
        return source
    prov = getattr(source, "provenance", None)
    per_variant = getattr(source, "predictions", source)
    if not hasattr(per_variant, "items"):
        raise BgbenchError(f"cannot analyse a {type(source).__name__}: pass an evaluation result, a mapping "
                           f"variant -> predictions, or a results store and a run id")
    config = dict(getattr(prov, "config", None) or {})
    spec = getattr(prov, "spec", None) or {}
    class_map = ClassMap.from_config(config.get("class_map"))
    return RunTable({v: _stored_variant(p, v, mapping, class_map) for v, p in per_variant.items()},
                    classes=list(classes or config.get("classes") or []), run_id=getattr(source, "run_id", None),
                    model=getattr(prov, "model", None) or getattr(source, "model", None),
                    checkpoint_sha256=spec.get("checkpoint_sha256"),
                    data_root=getattr(prov, "data_root", None) or getattr(source, "data", None),
                    data_fingerprint=getattr(prov, "data_fingerprint", None), split=config.get("split", "val"))


def _stored_variant(p: Any, variant: str, mapping: Optional[str], class_map: Optional[ClassMap] = None
                    ) -> StoredVariant:
    """One variant's predictions as a `StoredVariant` sorted by image id (as the store returns them)."""
    if hasattr(p, "image_ids"):
        ids, labels, preds = list(p.image_ids), np.asarray(p.labels), np.asarray(p.preds)
        conf = np.asarray(getattr(p, "conf", np.ones(len(ids))), dtype=np.float64)
    else:
        rows = list(p)
        if any(len(r) != 3 for r in rows):
            raise BgbenchError(f"variant {variant!r}: rows must be (image_id, label, pred)")
        ids = [str(r[0]) for r in rows]
        labels, preds = np.array([r[1] for r in rows], np.int64), np.array([r[2] for r in rows], np.int64)
        conf = np.ones(len(ids))
    if mapping is not None:
        raw = [getattr(p, k, None) for k in ("top5_classes", "top5_probs", "superclass_probs")]
        if any(a is None for a in raw):
            raise BgbenchError(f"variant {variant!r} kept no raw 1000-class outputs (top-5 and superclass sums), "
                               f"so mapping {mapping!r} cannot be applied without inference")
        preds, conf = decide_stored(*raw, Mapping(mapping), class_map)
    order = np.argsort(np.asarray(ids, dtype=object), kind="stable")
    top5 = getattr(p, "top5_classes", None)
    raw = None if top5 is None else np.asarray(top5, np.int64)[:, 0][order]
    return StoredVariant([ids[k] for k in order], np.asarray(labels, np.int64)[order],
                         np.asarray(preds, np.int64)[order], np.asarray(conf, np.float64)[order], raw)


def run_config(row) -> dict:
    return json.loads(row["config"]) if row["config"] else {}


def stored_predictions(store, run_id: int, mapping: Optional[str] = None,
                       variants: Optional[Sequence[str]] = None) -> Dict[str, StoredVariant]:
    """Per-variant predictions of eval run `run_id`.

    Args:
        mapping: None keeps the stored decisions; 'argmax' or 'superclass' re-decides a
            1000-class run from its stored top-5 and superclass sums, with no inference.
    """
    class_map = ClassMap.from_config(run_config(store.run_row(run_id)).get("class_map"))
    out: Dict[str, StoredVariant] = {}
    for v in variants or store.run_variants(run_id):
        rows = store.predictions(run_id, v)
        if not rows:
            raise BgbenchError(f"run {run_id} has no predictions for variant {v!r} "
                               f"(stored: {', '.join(store.run_variants(run_id)) or 'none'})")
        ids = [r["image_id"] for r in rows]
        labels = np.fromiter((r["label"] for r in rows), np.int64, len(rows))
        preds = np.fromiter((r["pred"] for r in rows), np.int64, len(rows))
        conf = np.fromiter((r["confidence"] for r in rows), np.float64, len(rows))
        if mapping is not None:  # 1000-class runs only: their stored top-5 and sums, through the recorded class map
            if any(r["superclass_probs"] is None or r["top5_classes"] is None for r in rows):
                raise BgbenchError(f"run {run_id} stored no raw 1000-class outputs (top-5 and superclass sums), "
                                   f"so --mapping {mapping} cannot be applied without inference")
            top_c = np.array([json.loads(r["top5_classes"]) for r in rows], dtype=np.int64)
            top_p = np.array([json.loads(r["top5_probs"]) for r in rows], dtype=np.float64)
            sums = np.array([json.loads(r["superclass_probs"]) for r in rows], dtype=np.float64)
            preds, conf = decide_stored(top_c, top_p, sums, Mapping(mapping), class_map)
        raw = None if any(r["top5_classes"] is None for r in rows) else \
            np.fromiter((json.loads(r["top5_classes"])[0] for r in rows), np.int64, len(rows))  # top-1 ImageNet class
        out[v] = StoredVariant(ids, labels, preds, conf, raw)
    return out
