"""Penultimate features of a frozen model over a dataset's images, extracted once and cached.

Last-layer retraining reads each image's features many times (every C of the grid, every
balanced subset), and a researcher fits several heads on one backbone (DFR, a linear probe, other
variants). So the features are computed once per (model, data, variant, split) and kept on disk:
`<cache>/<key>.npz` with the image ids, labels and features, where the key hashes the model's
spec (its weights' sha256, or its seeded init, its normalization and resize) and the dataset's
fingerprint. A changed model or dataset gets a new key, never a stale file. The file is written
to a temporary name and renamed, so a killed extraction leaves no half file behind.

Under torchrun each rank extracts whole batches of the images (block b to rank b mod K) and rank 0
joins them in order and writes the cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import torch

from .. import console
from ..distributed import Ranks
from ..data.pixel_cache import Pixels, pixels_of
from ..evaluation.feed import Images, batches, chunks_of, gathered
from ..evaluation.numerics import strict_fp32
from ..models.heads import pre_logits
from ..models.spec import BgModel
from ..options import resolve_workers

#: Where features are cached when no folder is named: $BGBENCH_CACHE/features, else ~/.cache/bgbench/features.
CACHE_ENV = "BGBENCH_CACHE"


@dataclass
class Features:
    """image ids, labels (N,) and penultimate features (N, D) float32 of one variant split."""

    image_ids: List[str]
    labels: np.ndarray
    x: np.ndarray
    key: str
    cached: bool = False  # read from the cache rather than computed


def default_cache() -> Path:
    base = os.environ.get(CACHE_ENV)
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "bgbench") / "features"


def cache_key(model: BgModel, data_fingerprint: str, variant: str, split: str) -> str:
    """A hash of what decides the features: the model's spec (weights' sha256 or seeded init,
    normalization, input size and resize policy) and the data (fingerprint, variant, split)."""
    spec = model.spec.to_dict()
    what = {k: spec.get(k) for k in ("name", "arch", "mean", "std", "input_size", "resize", "interpolation",
                                     "checkpoint_sha256")}
    what.update(init_seed=(spec.get("extra") or {}).get("init_seed"), data=data_fingerprint, variant=variant,
                split=split)
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]


def penultimate_features(model: BgModel, items, key: str, ranks: Ranks, cache: Optional[Path], batch_size: int,
                         progress: bool = True) -> Optional[Features]:
    """Features of `items` (a layout's items of one variant): from `cache` when it holds `key`,
    else computed (this rank's share under torchrun) and cached by rank 0. Rank 0 returns them,
    the other ranks None."""
    path = None if cache is None else Path(cache) / f"{key}.npz"
    if path is not None and path.is_file():
        found = _read(path, key, items, say=ranks.main)
        if found is not None:
            return found if ranks.main else None
    pixels = pixels_of(items)  # one entry for every rank; the forward starts as the first images land
    rows = _extract(model, pixels, ranks, batch_size, progress and ranks.main)
    if rows is None:
        return None
    feats = Features([it.image_id for it in items], np.asarray([it.label for it in items], dtype=np.int64),
                     np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32), key)
    if path is not None:
        _write(path, feats)
    return feats


def _extract(model: BgModel, pixels: Pixels, ranks: Ranks, batch_size: int, progress: bool) -> Optional[list]:
    """Every image's (D,) features in order on rank 0 (None on the others): this rank's batches
    through the feed, kept on the device until the pass ends."""
    out: Dict[int, list] = {}
    feats = []
    with torch.inference_mode(), strict_fp32():
        for k, batch in batches(Images.of(pixels, batch_size), device=ranks.device,
                                workers=resolve_workers(None, str(ranks.device)), ranks=ranks, progress=progress,
                                desc="features"):
            feats.append((k, pre_logits(model, batch.x).float()))
    for k, f in feats:
        out.setdefault(k, []).extend(f.cpu().numpy())
    return gathered(out, len(chunks_of(len(pixels), batch_size)), ranks)


def _read(path: Path, key: str, items, say: bool = True) -> Optional[Features]:
    """The cached features, if the file is whole and names the same images in the same order.

    A damaged file (truncated or emptied by a kill, a full disk or another tool: BadZipFile,
    EOFError, ...) is recomputed, not trusted, and `say`s so in one status line."""
    try:
        with np.load(path, allow_pickle=False) as z:
            ids, labels, x = [str(i) for i in z["image_ids"]], z["labels"], z["x"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        if say:
            console.status(f"feature cache {path} is damaged ({type(e).__name__}: {e}); recomputing the features")
        return None
    if ids != [it.image_id for it in items]:
        return None
    return Features(ids, labels.astype(np.int64), x.astype(np.float32), key, cached=True)


def _write(path: Path, feats: Features) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, image_ids=np.asarray(feats.image_ids), labels=feats.labels, x=feats.x)
    os.replace(tmp, path)
