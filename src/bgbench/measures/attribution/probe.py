"""The feature-attribution probe (RIVAL10 §6): config, engine, runner and the stored summary.

For every original image and every attribute it has, the IoU of each penultimate-layer feature's
map (`feature_maps`: upsampled to the image, binarized at 0.5 of its maximum) with the attribute's
mask. The best features of each attribute, per class and over all classes, are kept
(`attribution_summary.top_features`); their per-image IoUs go to the `probe_attribution` table,
from which `attribution_summary` recomputes the rankings with no inference.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import ClassVar, Dict, List, Optional

import numpy as np

from ... import checks
from ...options import flag, runtime
from ..result import MeasureResult, stored_summary
from .table import TABLE
from ...errors import BgbenchError
from ...store import Store
from .summary import EPS, AttributionSummary, summarize_attribution, top_features
from ...probing.bootstrap import REPLICATES
from ...data.prefetch import workers_field

KIND = "probe_attribution"


@dataclass
class AttributionConfig:
    """top: features kept per attribute and class (and over all classes). No predictions are made,
    so any model fits any dataset (groups are by true class)."""

    top: int = field(default=3, metadata=flag(
        "--top", "features kept per attribute and class, and over all classes (default %(default)s)"))
    batch_size: int = field(default=32, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the bootstrap over images behind the intervals (default %(default)s)"))
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        checks.at_least("--top", self.top, 1)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)


@dataclass
class AttributionResult(MeasureResult):
    """rows: (image_id, label, attribute, feature, iou) for each group's top features."""

    features: int = 0

    measure: ClassVar[str] = "attribution"

    def summarize(self) -> AttributionSummary:
        return summary_of(self.rows, self.config)

    def extra_outputs(self) -> dict:
        return {"features": self.features}



def summary_of(rows, config: dict) -> AttributionSummary:
    classes = list(config.get("classes") or [])

    def name(i: int) -> str:
        return classes[i] if 0 <= i < len(classes) else f"class {i}"
    return summarize_attribution(rows, name, seed=int(config.get("seed", 0)),
                                 replicates=int(config.get("bootstrap_replicates", REPLICATES)))


def attribution_summary(store: Store, run_id: int) -> AttributionSummary:
    """The summary of a stored probe_attribution run, recomputed from its per-image table."""
    return stored_summary(store, run_id, KIND, TABLE, summary_of)


def feature_ious(maps, masks) -> "np.ndarray":
    """(a, K) IoU of each of one image's K feature maps ((K, h, w)) with each of its a attribute
    masks ((a, H, W) bool): maps upsampled to the masks' size, binarized at 0.5 of their max."""
    from ...probing.feature_maps import binarize, upsample
    on = binarize(upsample(maps[None], masks.shape[-2:])[0]).flatten(1).float()  # (K, HW)
    want = masks.flatten(1).float()  # (a, HW)
    inter = want @ on.T
    union = want.sum(1)[:, None] + on.sum(1)[None, :] - inter
    return ((inter + EPS) / (union + EPS)).cpu().numpy()


def probe_attribution(model, data, cfg: AttributionConfig, progress: bool = True, limit: Optional[int] = None
                      ) -> Optional[AttributionResult]:
    """The features of `model` that best overlap each attribute of `data` (a dataset with attribute masks).

    Under torchrun the ranks share the images (`sharding.ProbeShard`); rank 0 gathers every
    image's IoUs, ranks the features as one process does and returns the result; the other ranks
    return None.
    """
    import torch

    from ... import console
    from ...data.resolve import resolve_layout
    from ...distributed import setup, world_record
    from ...models.spec import meet_data
    from ...recording import Provenance
    from ...probing.batches import attribute_batches
    from ...probing.feature_maps import feature_maps
    from ...probing.sharding import ProbeShard

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    source = layout.attribute_source
    if source is None:
        raise BgbenchError(f"{layout.root} has no attribute masks (attr_mask/{layout.split}/ or a RIVAL10 release); "
                           f"`bgbench synth` writes them")
    meet_data(model, layout, labels=False)
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
    device = shard.ranks.device
    model = model.to(device).eval()
    features = 0
    bar = console.progress(enabled=progress and shard.ranks.main, total=len(shard.pairs), desc="attribution probe",
                           unit="img")
    with torch.inference_mode():
        for items, x, _, parts in attribute_batches(shard.pairs, cfg.batch_size, device, source, cfg.workers):
            maps = feature_maps(model, x)
            features = int(maps.shape[1])
            have: Dict[int, List[str]] = {}
            for name, (idx, _) in parts.items():
                for k in idx.tolist():
                    have.setdefault(k, []).append(name)
            found = []  # (image_id, label, attribute, IoU of every feature)
            for k, names in sorted(have.items()):
                masks = torch.stack([parts[n][1][(parts[n][0] == k).nonzero()[0, 0], 0] > 0.5 for n in names])
                for name, ious in zip(names, feature_ious(maps[k], masks)):
                    found.append((items[k].image_id, items[k].label, name, ious.astype(np.float32)))
            shard.add(items, found)
            bar.update(len(items))
    bar.close()
    gathered = shard.gathered()
    if gathered is None:
        return None
    features = max([features] + [len(g[3]) for g in gathered])  # a rank with no batch saw no map
    records = [(label, name, ious) for _, label, name, ious in gathered]
    chosen = top_features(records, cfg.top)
    rows = []
    for image_id, label, name, ious in gathered:
        kept = sorted(set(chosen[(name, int(label))]) | set(chosen[(name, "all")]))
        rows += [(image_id, int(label), name, k, float(ious[k])) for k in kept]
    config = {**asdict(cfg), "split": layout.split, "images": len(pairs), "attributes": list(source.names),
              "features": features, "binarize": "map >= 0.5 * its max, upsampled bilinearly to the image",
              **world_record(shard.ranks)}
    result = AttributionResult(rows=rows, config={**config, "classes": list(layout.classes)}, features=features,
                               seconds=time.time() - t0)
    result.provenance = Provenance.of(KIND, config, model=model, layout=layout, seed=cfg.seed)
    return result
