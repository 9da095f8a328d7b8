"""The saliency measure (RIVAL10): its config and its class.

Grad-CAM on the predicted class (`probing.gradcam`, post-processed as pytorch-grad-cam returns
it), RIVAL10's alignment measures per image (`metrics`), aggregated by predicted class as RIVAL10
does and over images (`summary`), and a PNG of the most and least aligned images per predicted
class (`overlays`) when an output folder is given.

On Hard ImageNet's data (`data.hardimagenet`) the run follows Hard ImageNet's `saliency_analysis.py`
(protocol 'hardimagenet', recorded): Grad-CAM on the true class (lines 102-103; for a 1000-class
model its ImageNet index, the loader's `ft=False` label), IoU and Dice of the map binarized at 0.5
(lines 67-94), images whose mask is empty after the crop left out (lines 145-152: every measure
NaN), and its figures the means over images (`np.nanmean`, line 193).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, NamedTuple, Optional

import numpy as np

from ... import checks
from ...options import flag, runtime
from ...evaluation.metrics import REPLICATES
from ...probing.gradcam import gradcam_batch, gradcam_maps, gradcam_terms, resolve_layer, device_maps
from ...data.facts import HARD_IMAGENET
from ..base import Autograd, BootstrapConfig, ModelMeasure
from ..registry import BenchmarkHeadlines, InProfile, Headline, SectionSpec
from .metrics import METRICS, absolute_iou_and_dice, saliency_alignment
from ..common.names import prediction_namer
from ..common.protocols import HARDIMAGENET, RIVAL10, probe_protocol
from .summary import SaliencyRow, SaliencySummary, summarize_saliency

OVERLAYS_FILE = "saliency_overlays.png"
#: The folder (beside OVERLAYS_FILE) with one overlay PNG per example, for the report's gallery.
EXAMPLES_FOLDER = "saliency_examples"


@dataclass(kw_only=True)
class SaliencyConfig(BootstrapConfig):
    layer: Optional[str] = field(default=None, metadata=flag(
        "--layer", "Grad-CAM layer, a module path inside the network (default: a ViT's last block's norm1, else the "
        "last feature stage of a timm model, else the last convolution)", type=str))
    batch_size: int = field(default=32, metadata=runtime())
    examples: int = field(default=4, metadata=flag(
        "--examples", "overlay images per predicted class: the most, then the least aligned by precision; 0: no PNG "
        "(default %(default)s)"))

    def __post_init__(self):
        super().__post_init__()
        checks.at_least("--examples", self.examples, 0)


class SaliencyMeasure(ModelMeasure):
    """Saliency alignment (RIVAL10): Grad-CAM on the predicted class against the object mask
    (precision, IoU, Dice, Δdensity, coverage, AP), by predicted class, with example overlays."""

    name = "saliency"
    position = 100
    source = ("RIVAL10's saliency alignment: Grad-CAM maps as pytorch-grad-cam returns them against "
              "the object mask (precision, IoU, Dice, Δdensity, coverage, AP), averaged per "
              "predicted class. On Hard ImageNet's data, Hard ImageNet's `saliency_analysis.py` "
              "(mmoayeri/HardImageNet), where its code differs: Grad-CAM on the true class (for a "
              "1000-class model its ImageNet index), IoU and Dice of the map binarized at 0.5 itself "
              "(not at 0.5 of its maximum), images whose mask the crop leaves empty left out, and its "
              "figures the mean IoU and mean delta density over images (`np.nanmean`; the summary's "
              "`hardimagenet`, metrics `saliency_iou_image_mean`, `saliency_density_diff_image_mean`). "
              "Its line 149 leaves `normalize` commented out, so its torchvision models saw unnormalized "
              "pixels; bgbench feeds every model its own normalization, as its `rfs.py` and "
              "`ablations.py` do")
    checked_against = ("tests/measures/test_saliency.py (against pytorch-grad-cam with RIVAL10's "
                       "formulas written out, and measures worked by hand; the same for the measures a "
                       "card computes, `device_metrics`, run on the CPU); "
                       "tests/measures/test_hardimagenet_probes.py (Hard ImageNet's "
                       "`compute_salient_alignment_scores`, written out from `saliency_analysis.py` in "
                       "tests/helpers/hardimagenet_oracle.py, with "
                       "pytorch-grad-cam's GradCAM on the same model: per-image IoU and delta density and "
                       "their means)")
    title = "saliency alignment"
    needs = ("model", "masks", "layers")
    help = ("Grad-CAM on the predicted class: RIVAL10's alignment with the mask (precision, IoU, Dice, Δdensity, "
            "coverage, AP)")
    description = ("Grad-CAM alignment with the object mask (RIVAL10's measures), by predicted class, with an "
                   "overlay PNG of the most and least aligned images")
    config = SaliencyConfig
    autograd = Autograd.GRAD
    row = SaliencyRow
    key = ("image_id",)
    headlines = (Headline("saliency_precision", label="Grad-CAM mass on the object", short="saliency precision"),)
    pictures = "examples"
    pictures_help = ("folder for saliency_overlays.png and saliency_examples/ (one overlay PNG per example, which "
                     "the report shows; default: a new probe_saliency_<time>/ beside the results store)")
    sections = (SectionSpec("saliency", "Saliency alignment (Grad-CAM)", f"{__package__}.section:saliency_section"),
                SectionSpec("saliency_gallery", "Most and least aligned Grad-CAM maps",
                            f"{__package__}.section:saliency_gallery", after="saliency"))
    benchmark_headlines = (BenchmarkHeadlines(HARD_IMAGENET, 10, replaces=True, headlines=(
        Headline("saliency_iou_image_mean", label="Hard ImageNet: Grad-CAM (true class) IoU with the object at 0.5, "
                 "mean over images with a mask (saliency_analysis.py)", short="Grad-CAM IoU"),
        Headline("saliency_density_diff_image_mean", label="Hard ImageNet: Grad-CAM density on the object minus off "
                 "it, mean over images with a mask (saliency_analysis.py)", short="Δ density"))),)
    profile = InProfile(40)
    forwards_per_image = 2  # one for the predicted class, one (with its backward) for Grad-CAM

    def prepare(self, run) -> _Layer:
        protocol = probe_protocol(run.layout)
        targets = true_class_outputs(run.model, len(run.layout.classes)) if protocol == HARDIMAGENET else None
        return _Layer(run.model, *resolve_layer(run.model, run.cfg.layer), protocol, targets)

    def launch(self, run, batch):
        """Each image's Grad-CAM terms on its predicted class (Hard ImageNet: its true class), queued
        on the device. On the CPU they go to the host with the predictions and masks, to be made
        into maps and measured in NumPy (`landed`); on a card the maps and every measure are
        computed there too (`gradcam.device_maps`, `device_metrics`), and only the measures and the
        predictions come back."""
        from ...evaluation.feed import Readback
        cam: _Layer = run.state
        target = None if cam.targets is None else [cam.targets[it.label] for it in batch.items]
        terms, preds = gradcam_terms(cam.model, cam.layer, batch.x, target)
        masks = batch.m[:, 0] > 0.5
        if not measured_on_device(batch.x.device):
            return Readback(terms=terms.float(), preds=preds, masks=masks)
        from .device_metrics import alignment_batch
        hard = cam.protocol == HARDIMAGENET
        measures = alignment_batch(device_maps(terms, tuple(batch.x.shape[-2:])), masks, absolute_iou=hard,
                                   empty_is_nan=hard)
        return Readback(measures=measures, preds=preds)

    def landed(self, run, batch, launched) -> List[SaliencyRow]:
        """The maps (pytorch-grad-cam's post-processing) measured against the masks (RIVAL10's
        measures; Hard ImageNet's IoU and Dice): on the host, or as the device measured them."""
        cam: _Layer = run.state
        got = launched.get()
        preds = got["preds"]
        if "measures" in got:
            return [SaliencyRow(it.image_id, it.label, pred, *(_sql(v) for v in values))
                    for it, pred, values in zip(batch.items, preds.tolist(), got["measures"].tolist())]
        maps, masks = gradcam_maps(got["terms"], tuple(batch.x.shape[-2:])), got["masks"]
        return [SaliencyRow(it.image_id, it.label, int(preds[k]),
                 *(_sql(v) for v in _measures(maps[k], masks[k], cam.protocol)))
                for k, it in enumerate(batch.items)]

    def recorded(self, run) -> dict:
        cam: _Layer = run.state
        return {"layer": cam.name, "requested": {"layer": run.cfg.layer}, "label_space": run.model.spec.label_space,
                "cam": "pytorch-grad-cam GradCAM output (min-max, cv2 bilinear resize, min-max, NaN to 0)",
                "scoring": cam.protocol,  # whose code it scores as; not a reference --protocol
                "target": "true class" if cam.protocol == HARDIMAGENET else "predicted class"}

    def draw(self, run, result, out_dir: Path) -> None:
        overlays, examples = _overlays(run.state, run.sets.pairs, result.rows, run.cfg, result.config, out_dir,
                                       run.device)
        result.extra.update(overlays=overlays, folder=str(out_dir), examples=examples)
        result.notes.append(f"example overlays: {overlays}")

    def outputs(self, run, result) -> dict:
        e = result.extra
        return {"layer": run.state.name, "overlays": e.get("overlays"), "folder": e.get("folder"),
                "examples": e.get("examples", [])}

    def text(self, result) -> str:
        return result.summary().text(result.config["layer"])

    def summarize(self, rows, config: dict) -> SaliencySummary:
        """The summary of per-image rows under the run's config (classes, label space, bootstrap)."""
        values = {m: np.array([np.nan if v is None else v for v in (getattr(r, m) for r in rows)], dtype=np.float64)
                  for m in METRICS}
        name = prediction_namer(config.get("classes") or [], config.get("label_space", "dataset") == "dataset")
        return summarize_saliency(values, [r.pred for r in rows], name, seed=int(config.get("seed", 0)),
                                  replicates=int(config.get("bootstrap_replicates", REPLICATES)),
                                  protocol=config.get("scoring", RIVAL10))


def measured_on_device(device) -> bool:
    """Whether a batch's maps are made and measured on its device (a card: its host would keep it
    waiting, 2.3 ms an image on one core) rather than in NumPy on the host (the CPU, where NumPy's
    are the reference's own computation, `metrics`)."""
    import torch
    return torch.device(device).type != "cpu"


class _Layer(NamedTuple):
    """The network Grad-CAM hooks, its layer's name and the layer; the protocol, and (Hard
    ImageNet) each label's true-class output index, the Grad-CAM target."""

    model: object
    name: str
    layer: object
    protocol: str = RIVAL10
    targets: Optional[List[int]] = None


def true_class_outputs(model, num_classes: int) -> List[int]:
    """label -> the model output that is its class: the label itself for a dataset-class model,
    the one ImageNet index its class map gives it for a 1000-class model."""
    from ...class_maps import IMAGENET1K
    if model.spec.label_space != IMAGENET1K:
        return list(range(num_classes))
    members = model.class_map.members()
    return [members[c][0] for c in range(num_classes)]


def _measures(cam: np.ndarray, mask: np.ndarray, protocol: str = RIVAL10) -> List[float]:
    """The measures of one map, in METRICS order: RIVAL10's; for Hard ImageNet, its IoU and Dice
    (the map binarized at 0.5), and nothing for an empty mask (its loader's images are left out)."""
    if protocol == HARDIMAGENET and not mask.any():
        return [float("nan")] * len(METRICS)
    s = saliency_alignment(cam, mask)
    if protocol == HARDIMAGENET:
        s["iou"], s["dice"] = absolute_iou_and_dice(cam, mask)
    return [s[n] for n in METRICS]


def _sql(v: float) -> Optional[float]:
    """NaN is stored as NULL."""
    return None if v != v else float(v)


def _overlays(cam: _Layer, pairs, rows, cfg: SaliencyConfig, config: dict, out_dir: Path, device: str):
    """Recompute the maps of the chosen examples (a batch or so) and draw them: the grid PNG's
    path, and one overlay PNG per example (`write_example_overlays`)."""
    from ...evaluation.feed import masked_batches
    from .overlays import choose_examples, write_example_overlays, write_overlays
    chosen = {ex.image_id: ex for ex in choose_examples(rows, cfg.examples)}
    wanted = [p for p in pairs if p[0].image_id in chosen]
    panels = {}
    for _, (items, x, m, _) in masked_batches(wanted, batch_size=cfg.batch_size, device=device, workers=cfg.workers):
        maps, _ = gradcam_batch(cam.model, cam.layer, x,
                                None if cam.targets is None else [cam.targets[it.label] for it in items])
        for k, it in enumerate(items):
            panels[it.image_id] = (chosen[it.image_id], it.label, x[k].permute(1, 2, 0).cpu().numpy(), maps[k],
                                   m[k, 0].cpu().numpy() > 0.5)
    ordered = [panels[i] for i in chosen if i in panels]
    name = prediction_namer(config["classes"], config["label_space"] == "dataset")
    grid = write_overlays([(ex, *rest) for ex, _, *rest in ordered], name, out_dir / OVERLAYS_FILE)
    return str(grid), write_example_overlays(ordered, out_dir / EXAMPLES_FOLDER)
