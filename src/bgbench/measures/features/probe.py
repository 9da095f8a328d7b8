"""The features measure (RIVAL10 §5 after Salient ImageNet): its config and its class.

One pass over the originals and masks of a dataset: each batch's feature maps, pooled features
and logits (`probing.feature_head`), and every channel's background share on every image from the
small maps (`engine.background_shares`). Then, with no model, the ranking and the flags
(`engine.rank_features`). With an output folder, the galleries re-run the network on the few
images they show (`draw`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from ... import checks, console
from ...errors import BgbenchError
from ...options import flag
from ..base import Autograd, ModelMeasure
from ..running import ProbeConfig
from ..registry import InProfile, Headline, SectionSpec
from ..common.names import prediction_namer
from .summary import FeaturesRow, FeaturesSummary, rule_text, summarize_features

GROUPINGS = ("prediction", "label")


@dataclass(kw_only=True)
class FeaturesConfig(ProbeConfig):
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

    def __post_init__(self):
        super().__post_init__()
        checks.at_least("--top-features", self.top_features, 1)
        checks.at_least("--top-images", self.top_images, 1)
        checks.one_of("--group-by", self.group_by, GROUPINGS)
        checks.within("--threshold", self.threshold, 0, 1)
        checks.at_least("--galleries", self.galleries, 0)


class FeaturesMeasure(ModelMeasure):
    """Spurious features (RIVAL10 §5 after Salient ImageNet): each class's top penultimate features by
    weight x mean activation, the share of their activation maps on the background, heatmap galleries."""

    name = "features"
    position = 110
    source = ("RIVAL10 §5 with Salient ImageNet's ranking (`topk_predictive_features`): each "
              "class's top penultimate features and the background share of their maps")
    checked_against = ("tests/measures/test_features.py (a hand-built network with a table worked "
                       "by hand; plain torch and cv2 recomputing the ranking and shares on a timm "
                       "model)")
    title = "spurious-feature discovery"
    needs = ("model", "masks", "layers")
    help = ("spurious features: each class's top penultimate features (weight x mean activation) and the share of "
            "their activation maps on the background")
    description = ("spurious-feature discovery (RIVAL10 §5 after Salient ImageNet): each class's top penultimate "
                   "features, the share of their activation maps on the background, and a heatmap gallery per class")
    config = FeaturesConfig
    autograd = Autograd.NO_GRAD
    row = FeaturesRow
    key = ("class_index", "rank")
    headlines = (Headline("features_bg_share", label="top features' map share on the background",
                          higher_is_better=False, short="features on bg",
                          reference=("features_bg_area", "bg area")),)
    pictures = "galleries"
    pictures_help = "folder for the heatmap PNGs (default: a new probe_features_<time>/ beside the results store)"
    sections = (SectionSpec("features", "Spurious features (RIVAL10 §5, Salient ImageNet's ranking)",
                            f"{__package__}.section:features_section"),)
    profile = InProfile(60)
    forwards_per_image = 1

    def prepare(self, run) -> "_Head":
        from ...probing.feature_head import LinearHead
        if run.cfg.group_by == "label" and run.model.spec.label_space != "dataset":
            raise BgbenchError(f"--group-by label needs a model whose outputs are the dataset's classes; "
                               f"{run.model.spec.name} has {run.model.spec.num_classes} ImageNet classes, whose "
                               "features are ranked per predicted class (--group-by prediction)")
        return _Head(LinearHead.of(run.model), {p[0].image_id: k for k, p in enumerate(run.sets.pairs)})

    def launch(self, run, batch):
        """Per image, queued on the device: its pooled features, prediction, and each channel's map
        share on the background (from the small maps: `engine.background_shares`); no map is kept."""
        from ...evaluation.feed import Readback
        from .engine import background_shares
        head = run.state.head
        maps, feats, logits = head.forward(batch.x)
        if head.pooled_is_map_mean is None:
            head.check(maps, feats, logits)  # once a run: it reads its answer back
        masks = batch.m[:, 0]
        return Readback(preds=logits.argmax(dim=1), pooled=feats.float(), shares=background_shares(maps, masks),
                        areas=(1 - masks.double()).mean(dim=(1, 2)))

    def landed(self, run, batch, launched) -> list:
        state: "_Head" = run.state
        got = launched.get()
        preds, areas = got["preds"], got["areas"]
        # the rows keep these until the run ends: copies, so that the (pinned, on a GPU) buffers go back
        pooled, shares = np.array(got["pooled"]), np.array(got["shares"])
        return [(state.index[it.image_id], it.label, int(preds[k]), pooled[k], shares[k], float(areas[k]))
                for k, it in enumerate(batch.items)]

    def finish(self, run, rows: list):
        """Every image's values ranked (`engine.rank_features`), with no model: one row per
        (class, rank), and the rule the run recorded."""
        from .engine import rank_features
        if not rows:
            raise BgbenchError("the dataset has no images to probe")
        state: "_Head" = run.state
        cfg: FeaturesConfig = run.cfg
        head = state.head
        if not head.pooled_is_map_mean:
            console.status(f"warning: {run.model.spec.name}'s pooled features are not the spatial means of its last "
                           "feature map's channels; a feature's map shows where its channel fires, not exactly what "
                           "it pools")
        items = [run.sets.pairs[r[0]][0] for r in rows]
        groups = np.array([r[2] if cfg.group_by == "prediction" else r[1] for r in rows])
        state.ranked = rank_features(np.stack([r[3] for r in rows]), groups, head.weight.float().cpu().numpy(),
                                     np.stack([r[4] for r in rows]), np.array([r[5] for r in rows]),
                                     cfg.top_features, cfg.top_images, cfg.threshold)
        return [_row(f, items) for f in state.ranked], {
            "features": head.features, "label_space": run.model.spec.label_space, "rule": rule_text(cfg.threshold),
            "pooled_is_map_mean": head.pooled_is_map_mean,
            "ranking": "Salient ImageNet: weight x mean activation over the group's images"}

    def draw(self, run, result, out_dir: Path) -> None:
        from .draw import draw_galleries
        state: "_Head" = run.state
        if not state.ranked:
            return
        result.extra["folder"] = str(out_dir)
        galleries = draw_galleries(state.head, run.sets.pairs, state.ranked, result.config, run.cfg, out_dir)
        result.extra["galleries"] = {str(c): p for c, p in galleries.items()}
        if galleries:
            result.notes.append(f"heatmap galleries: {out_dir}")

    def outputs(self, run, result) -> dict:
        return {"folder": result.extra.get("folder"), "galleries": result.extra.get("galleries", {}),
                "pooled_is_map_mean": result.config.get("pooled_is_map_mean")}

    def summarize(self, rows, config: dict) -> FeaturesSummary:
        name = prediction_namer(config.get("classes") or [], config.get("label_space", "dataset") == "dataset")
        return summarize_features(rows, name, config)


@dataclass
class _Head:
    """The network's head and feature maps (`LinearHead`), where each image sits, and the ranking."""

    head: object
    index: Dict[str, int]
    ranked: list = field(default_factory=list)


def _row(f, items) -> FeaturesRow:
    """A RankedFeature as a stored row: image indices become ids, lists JSON."""
    ids = [items[i].image_id for i in f.top]
    return FeaturesRow(f.class_index, f.rank, f.feature, f.contribution, f.weight, f.mean_activation, f.images, f.bg_share,
            f.bg_area, int(f.spurious), json.dumps(ids), json.dumps(f.top_activations), json.dumps(f.top_shares))
