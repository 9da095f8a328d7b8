"""The features probe (RIVAL10 §5 after Salient ImageNet): config, runner (I/O) and the summary of a
stored run.

One pass over the originals and masks of a dataset: each batch's feature maps, pooled features
and logits (`feature_head`), and every channel's background share on every image from the small
maps (`features_engine.background_shares`). Then, with no model, the ranking and the flags
(`features_engine.rank_features`). With an output folder, the galleries re-run the network on the
few images they show (`features_gallery`). Nothing is recorded here: `bgbench.record` does that.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar, Dict, Optional

import numpy as np

from ... import checks
from ...options import flag, runtime
from ..result import MeasureResult, stored_summary
from .table import TABLE
from ...errors import BgbenchError
from ...store import Store
from .summary import FeaturesSummary, rule_text, summarize_features
from ..saliency.summary import class_namer
from ...data.prefetch import workers_field

GROUPINGS = ("prediction", "label")


@dataclass
class FeaturesConfig:
    top_features: int = field(default=5, metadata=flag(
        "--top-features", "features per class, by contribution to its logit (default %(default)s)"))
    top_images: int = field(default=5, metadata=flag(
        "--top-images", "each feature's most activating images of the class, whose maps are measured "
        "(default %(default)s)"))
    group_by: str = field(default="prediction", metadata=flag(
        "--group-by", "a class's images: those predicted as it (Salient ImageNet's) or those labelled so "
        "(default %(default)s)", choices=GROUPINGS))
    threshold: Optional[float] = field(default=None, metadata=flag(
        "--threshold", "a feature is a spurious candidate when the mean background share of its maps exceeds this "
        "share (default: the background's area share on the same images, i.e. the map is denser on the background "
        "than on the object)", type=float))
    galleries: int = field(default=30, metadata=flag(
        "--galleries", "classes with a heatmap PNG, the largest first; 0: no PNG (default %(default)s)"))
    batch_size: int = field(default=64, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()

    def __post_init__(self):
        checks.at_least("--top-features", self.top_features, 1)
        checks.at_least("--top-images", self.top_images, 1)
        checks.one_of("--group-by", self.group_by, GROUPINGS)
        checks.within("--threshold", self.threshold, 0, 1)
        checks.at_least("--galleries", self.galleries, 0)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)


@dataclass
class FeaturesResult(MeasureResult):
    """rows: tuples in `features_summary.COLUMNS` order, one per (class, rank); the galleries drawn."""

    galleries: Dict[int, str] = field(default_factory=dict)
    out_dir: Optional[str] = None

    measure: ClassVar[str] = "features"

    def summarize(self) -> FeaturesSummary:
        return summary_of(self.rows, self.config)

    def extra_outputs(self) -> dict:
        return {"folder": self.out_dir, "galleries": {str(c): p for c, p in self.galleries.items()},
                "pooled_is_map_mean": self.config.get("pooled_is_map_mean")}

    def table(self) -> str:
        text = self.summary().table()
        return text + (f"\nheatmap galleries: {self.out_dir}" if self.galleries else "")



def summary_of(rows, config: dict) -> FeaturesSummary:
    name = class_namer(config.get("classes") or [], config.get("label_space", "dataset") == "dataset")
    return summarize_features(rows, name, config)


def features_summary(store: Store, run_id: int) -> FeaturesSummary:
    """The summary of a stored probe_features run, from its rows."""
    return stored_summary(store, run_id, "probe_features", TABLE, summary_of)


@dataclass
class _Pass:
    """What one pass over the dataset keeps: per image, never a map."""

    items: list
    labels: np.ndarray
    preds: np.ndarray
    pooled: np.ndarray  # (N, D)
    shares: np.ndarray  # (N, D) background share of each channel's map (NaN: zero map)
    areas: np.ndarray  # (N,) background share of the image


def _collect(head, pairs, cfg: FeaturesConfig, progress: bool, shard) -> Optional[_Pass]:
    """One pass over this rank's share of the images (`sharding.ProbeShard`); on rank 0, every
    rank's per-image values in the order one process makes them, else None."""
    import torch

    from ... import console
    from ...probing.batches import masked_batches
    from .engine import background_shares
    index = {p[0].image_id: k for k, p in enumerate(pairs)}
    bar = console.progress(enabled=progress and shard.ranks.main, total=len(shard.pairs), desc="features probe",
                           unit="img")
    with torch.no_grad():
        for batch, x, m in masked_batches(shard.pairs, cfg.batch_size, shard.ranks.device, cfg.workers):
            maps, feats, logits = head.forward(x)
            if head.pooled_is_map_mean is None:
                head.check(maps, feats, logits)
            masks = m[:, 0]
            preds = logits.argmax(dim=1).cpu().numpy()
            pooled = feats.float().cpu().numpy()
            shares = background_shares(maps, masks).cpu().numpy()
            areas = (1 - masks.double()).mean(dim=(1, 2)).cpu().numpy()
            shard.add(batch, [(index[it.image_id], it.label, int(preds[k]), pooled[k], shares[k], float(areas[k]))
                              for k, it in enumerate(batch)])
            bar.update(len(batch))
    bar.close()
    rows = shard.gathered()
    if rows is None:
        return None
    if not rows:
        raise BgbenchError("the dataset has no images to probe")
    return _Pass([pairs[r[0]][0] for r in rows], np.array([r[1] for r in rows]), np.array([r[2] for r in rows]),
                 np.stack([r[3] for r in rows]), np.stack([r[4] for r in rows]), np.array([r[5] for r in rows]))


def probe_features(model, data, cfg: FeaturesConfig, out_dir: Optional[str | Path] = None, progress: bool = True,
                   limit: Optional[int] = None) -> Optional[FeaturesResult]:
    """Rank each class's penultimate features of `model` on the originals of `data` and measure where
    their activation maps lie against the masks; with `out_dir`, write the heatmap galleries there.

    Under torchrun the ranks share the forward passes (`sharding.ProbeShard`) and rank 0 ranks the
    features of all images, draws the galleries and returns the result of one process; the other
    ranks return None.
    """
    from ... import console
    from ...data.resolve import resolve_layout
    from ...distributed import setup, world_record
    from ...probing.sharding import ProbeShard
    from ...models.spec import meet_data
    from ...recording import Provenance
    from ...probing.feature_head import LinearHead
    from .engine import rank_features

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    meet_data(model, layout)
    if cfg.group_by == "label" and model.spec.label_space != "dataset":
        raise BgbenchError(f"--group-by label needs a model whose outputs are the dataset's classes; "
                           f"{model.spec.name} has {model.spec.num_classes} ImageNet classes, whose features are "
                           "ranked per predicted class (--group-by prediction)")
    shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
    device = shard.ranks.device
    model = model.to(device).eval()
    head = LinearHead.of(model)
    seen = _collect(head, pairs, cfg, progress, shard)
    if seen is None:
        return None
    if not head.pooled_is_map_mean:
        console.status(f"warning: {model.spec.name}'s pooled features are not the spatial means of its last feature "
                       "map's channels; a feature's map shows where its channel fires, not exactly what it pools")
    groups = seen.preds if cfg.group_by == "prediction" else seen.labels
    ranked = rank_features(seen.pooled, groups, head.weight.float().cpu().numpy(), seen.shares, seen.areas,
                           cfg.top_features, cfg.top_images, cfg.threshold)
    rows = [_row(f, seen.items) for f in ranked]
    config = {**asdict(cfg), "split": layout.split, "images": len(pairs), "features": head.features,
              "label_space": model.spec.label_space, "classes": list(layout.classes),
              "rule": rule_text(cfg.threshold), "pooled_is_map_mean": head.pooled_is_map_mean,
              "ranking": "Salient ImageNet: weight x mean activation over the group's images"}
    result = FeaturesResult(rows=rows, config=config)
    if out_dir is not None and cfg.galleries > 0 and ranked:
        from .draw import draw_galleries
        result.out_dir = str(Path(out_dir))
        result.galleries = draw_galleries(head, pairs, ranked, config, cfg, Path(out_dir))
    result.seconds = time.time() - t0
    result.provenance = Provenance.of("probe_features", {**config, **world_record(shard.ranks)}, model=model,
                                      layout=layout)
    return result


def _row(f, items) -> tuple:
    """A RankedFeature as a stored row (COLUMNS order): image indices become ids, lists JSON."""
    ids = [items[i].image_id for i in f.top]
    return (f.class_index, f.rank, f.feature, f.contribution, f.weight, f.mean_activation, f.images, f.bg_share,
            f.bg_area, int(f.spurious), json.dumps(ids), json.dumps(f.top_activations), json.dumps(f.top_shares))
