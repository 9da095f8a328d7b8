"""The feature-attribution measure (RIVAL10 §6): its config and its class.

For every original image and every attribute it has, the IoU of each penultimate-layer feature's
map (`feature_maps`: upsampled to the image, binarized at 0.5 of its maximum) with the attribute's
mask. The best features of each attribute, per class and over all classes, are kept
(`summary.top_features`); their per-image IoUs are the run's rows, from which the summary
recomputes the rankings with no inference.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from ... import checks
from ...options import flag, runtime
from ...evaluation.metrics import REPLICATES
from ..base import Attributes, BootstrapConfig, ModelMeasure
from ..examples import class_namer
from ..registry import Headline, SectionSpec
from .summary import EPS, AttributionRow, AttributionSummary, summarize_attribution, top_features


@dataclass(kw_only=True)
class AttributionConfig(BootstrapConfig):
    """top: features kept per attribute and class (and over all classes). No predictions are made,
    so any model fits any dataset (groups are by true class)."""

    top: int = field(default=3, metadata=flag(
        "--top", "features kept per attribute and class, and over all classes (default %(default)s)"))
    batch_size: int = field(default=32, metadata=runtime())

    def __post_init__(self):
        super().__post_init__()
        checks.at_least("--top", self.top, 1)


def feature_ious(maps, masks):
    """(a, K) IoU of each of one image's K feature maps ((K, h, w)) with each of its a attribute
    masks ((a, H, W) bool): maps upsampled to the masks' size, binarized at 0.5 of their max; a
    tensor on the maps' device."""
    from ...probing.feature_maps import binarize, upsample
    on = binarize(upsample(maps[None], masks.shape[-2:])[0]).flatten(1).float()  # (K, HW)
    want = masks.flatten(1).float()  # (a, HW)
    inter = want @ on.T
    union = want.sum(1)[:, None] + on.sum(1)[None, :] - inter
    return (inter + EPS) / (union + EPS)


class AttributionMeasure(ModelMeasure):
    """Feature attribution (RIVAL10 §6): per attribute, the penultimate-layer features whose activation
    maps best overlap its mask (IoU at 0.5 of the map's maximum), per class and over all classes."""

    name = "attribution"
    position = 130
    source = ("RIVAL10 §6: the IoU of each penultimate feature's map, binarized at 0.5 of its "
              "maximum, with each attribute's mask")
    checked_against = ("tests/measures/test_attribution.py (feature IoU by hand; features on "
                       "Synthetic-9's class-defining parts of a trained model)")
    title = "feature attribution"
    needs = ("model", "attributes", "layers")
    help = ("per attribute, the features whose maps best overlap its mask (IoU at 0.5 of the map's max), per class "
            "and over all classes")
    description = ("per attribute, the penultimate-layer features whose activation maps best overlap its mask "
                   "(RIVAL10's feature attribution)")
    data_help = "original/, fg_mask/ and attr_mask/"
    config = AttributionConfig
    attributes = Attributes.REQUIRED
    decides = False  # no predictions are made: any model fits any dataset (groups are by true class)
    row = AttributionRow
    key = ("image_id", "attribute", "feature")
    order = ("image_id",)
    headlines = (Headline("attribution_iou", label="mean over attributes of the best feature's IoU",
                          short="attribution IoU"),)
    sections = (SectionSpec("attribution", "Feature attribution (RIVAL10 §6)",
                            f"{__package__}.section:attribution_section"),)
    forwards_per_image = 1

    def launch(self, run, batch):
        """For each attribute an image has, the IoU of every feature with its mask, queued on the
        device: (image position, its attributes' names) and the IoUs on the way to the host."""
        import torch

        from ...evaluation.feed import Readback
        from ...probing.feature_maps import feature_maps
        maps = feature_maps(run.model, batch.x)
        have: Dict[int, List[str]] = {}
        for name, (_, _, positions) in batch.parts.items():
            for k in positions:
                have.setdefault(k, []).append(name)
        found, ious = [], {}
        for k, names in sorted(have.items()):
            masks = torch.stack([batch.parts[n][1][batch.parts[n][2].index(k), 0] > 0.5 for n in names])
            ious[f"ious{len(found)}"] = feature_ious(maps[k], masks)
            found.append((k, names))
        return found, Readback(**ious)

    def landed(self, run, batch, launched) -> list:
        """(image_id, label, attribute, IoU of every feature) for each attribute an image has."""
        found, back = launched
        got = back.get()
        return [(batch.items[k].image_id, batch.items[k].label, name, ious.astype(np.float32))
                for j, (k, names) in enumerate(found) for name, ious in zip(names, got[f"ious{j}"])]

    def finish(self, run, gathered: list):
        """Each attribute's top features per class and over all classes (`summary.top_features`),
        chosen from every image's IoUs; their per-image IoUs are the stored rows."""
        chosen = top_features([(label, name, ious) for _, label, name, ious in gathered], run.cfg.top)
        rows = []
        for image_id, label, name, ious in gathered:
            kept = sorted(set(chosen[(name, int(label))]) | set(chosen[(name, "all")]))
            rows += [AttributionRow(image_id, int(label), name, k, float(ious[k])) for k in kept]
        return rows, {"features": max([0] + [len(g[3]) for g in gathered]),
                      "binarize": "map >= 0.5 * its max, upsampled bilinearly to the image"}

    def outputs(self, run, result) -> dict:
        return {"features": result.config["features"]}

    def summarize(self, rows, config: dict) -> AttributionSummary:
        return summarize_attribution(rows, class_namer(config.get("classes") or []), seed=int(config.get("seed", 0)),
                                     replicates=int(config.get("bootstrap_replicates", REPLICATES)))
