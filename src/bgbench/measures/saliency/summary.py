"""Saliency alignment aggregated as RIVAL10 aggregates it, and as a plain mean over images.

RIVAL10 (`bg_fg_saliency.py`, `saliency_alignment_plots.py`) groups images by the class the model
*predicted*, takes each group's `np.nanmean`, and averages those class means: that is the
headline here (over the predicted classes that occur). The mean over images is reported beside
it, labelled as such. NaN values (precision of an all-zero map, 0/0) are skipped by both means,
as `np.nanmean` skips them; every other value of such an image counts.

Intervals (95%): percentiles of one bootstrap over images, stratified by predicted class (seeded,
recorded), for the headline and the image mean alike. A class with one image is resampled into
itself, so it adds no spread: when fewer than half of the images with a value lie in classes of at
least two (seven images, mostly one per predicted class), the interval measures almost nothing and
looks precise. It is then recorded as zero width, `degenerate` with the reason, which every
writer marks as RFS's is (`[degenerate, n=K]`: text, JSON, scorecard and report), never as bounds.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, make_dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from ...evaluation.metrics import percentile_interval, stratified_weights, REPLICATES, interval, finite_or_none
from ..common.protocols import HARDIMAGENET, RIVAL10
from .metrics import METRICS
from ..result import Summary, estimate_row
from ...store.schema import TableRow

HEADLINE = "mean over predicted classes of the per-class means (RIVAL10)"
IMAGE_MEAN = "mean over images"
#: How a run computed (recorded as `scoring`): RIVAL10's code, or Hard ImageNet's on its data.
#: Hard ImageNet's figures (`saliency_analysis.py` line 193): np.nanmean over the images with a mask.
HARDIMAGENET_FIGURES = ("iou", "density_diff")

#: One image's row of the probe's table: `image_id` of class `label`, the class `pred` its map was
#: drawn for, and each of RIVAL10's measures of the map (`METRICS`, in order; None where undefined,
#: the precision of an all-zero map).
SaliencyRow = make_dataclass("SaliencyRow", [("image_id", str), ("label", int), ("pred", int),
                                             *((m, Optional[float], field(default=None)) for m in METRICS)],
                             bases=(TableRow,), frozen=True, slots=True, order=True)
SaliencyRow.__module__ = __name__  # where pickle (torchrun's gather) finds it


@dataclass
class SaliencySummary(Summary):
    """headline / image_mean: metric -> {value, lo, hi, n}; per_class: predicted class ->
    {images, metric -> mean}; flat: images whose map is zero everywhere."""

    headline: Dict[str, dict]
    image_mean: Dict[str, dict]
    per_class: Dict[str, dict]
    images: int
    flat: int
    bootstrap: dict = field(default_factory=dict)
    protocol: str = RIVAL10

    def hard_imagenet(self) -> Optional[dict]:
        """Hard ImageNet's figures of a run on its data: mean IoU and mean delta density over the
        images with a mask (its `np.nanmean`), with their intervals; None for other runs."""
        if self.protocol != HARDIMAGENET:
            return None
        return {m: finite_or_none(self.image_mean[m]) for m in HARDIMAGENET_FIGURES}

    def document(self) -> dict:
        out = {"aggregation": {"headline": HEADLINE, "image_mean": IMAGE_MEAN}, "images": self.images,
               "flat_maps": self.flat, "bootstrap": self.bootstrap, "protocol": self.protocol,
               "headline": self.headline, "image_mean": self.image_mean, "per_predicted_class": self.per_class}
        if self.protocol == HARDIMAGENET:
            out["hardimagenet"] = self.hard_imagenet()
        return out

    def metrics(self) -> List[tuple]:
        """saliency_<m> (the headline; n: predicted classes) and saliency_<m>_image_mean (n:
        images with a value), variant ''; saliency_flat_maps (n: images)."""
        rows = [estimate_row(f"saliency_{m}", "", e) for m, e in self.headline.items()]
        rows += [estimate_row(f"saliency_{m}_image_mean", "", e) for m, e in self.image_mean.items()]
        rows.append(("saliency_flat_maps", "", float(self.flat), None, None, self.images))
        return rows

    def text(self, layer: str = "") -> str:
        """What the command prints: its table, headed by the layer the maps were drawn on."""
        return "\n".join(self.lines(layer))

    def lines(self, layer: str = "") -> List[str]:
        short = {"precision": "precision", "iou": "IoU", "dice": "Dice", "density_diff": "Δdensity",
                 "coverage_25": "cover.25", "coverage_50": "cover.50", "coverage_75": "cover.75", "ap": "AP"}
        lines = [f"saliency alignment (Grad-CAM on the predicted class{f', layer {layer}' if layer else ''}; "
                 f"{self.images} images, {self.flat} all-zero maps)",
                 f"{'predicted class':<24}{'images':>7}" + "".join(f"{short[m]:>10}" for m in METRICS),
                 *(f"{cls[:23]:<24}{vals['images']:>7}" + "".join(f"{_f(vals[m]):>10}" for m in METRICS)
                   for cls, vals in self.per_class.items()),
                 f"{'headline (class mean)':<24}{'':>7}" + "".join(f"{_f(self.headline[m]['value']):>10}"
                                                                   for m in METRICS),
                 f"{'mean over images':<24}{'':>7}" + "".join(f"{_f(self.image_mean[m]['value']):>10}"
                                                              for m in METRICS)]
        p = self.headline["precision"]
        ci = interval(p["lo"], p["hi"], p.get("n"), _f) if p["lo"] is not None else f"[{_f(p['lo'])}, {_f(p['hi'])}]"
        how = f"degenerate: {p['degenerate']}" if p.get("degenerate") else \
            "95% bootstrap over images, stratified by predicted class"
        lines.append(f"headline = {HEADLINE}; precision {_f(p['value'])} {ci} ({how})")
        if self.protocol == HARDIMAGENET:
            iou, dd = self.image_mean["iou"], self.image_mean["density_diff"]
            lines.append(f"Hard ImageNet (saliency_analysis.py: Grad-CAM on the true class, map binarized at 0.5, "
                         f"mean over the {iou['n']} images with a mask): IoU {_f(iou['value'])}, "
                         f"delta density {_f(dd['value'])}")
        return lines


def _f(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"



def mean_over_images(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(replicates,): the weighted mean of the non-NaN values for each row of weights (NaN where
    a row weighs no value)."""
    ok = ~np.isnan(values)
    w = weights * ok
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w @ np.where(ok, values, 0.0)) / np.where(total > 0, total, 1), np.nan)


def class_mean_of_means(values: np.ndarray, groups: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(replicates,): per group, the weighted mean of its non-NaN values; then the mean over the
    groups that have one. weights: (replicates, N) image counts."""
    ok = ~np.isnan(values)
    v = np.where(ok, values, 0.0)
    means = []
    for g in np.unique(groups):
        members = groups == g
        w = weights[:, members] * ok[members]
        total = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            means.append(np.where(total > 0, (w @ v[members]) / np.where(total > 0, total, 1), np.nan))
    with warnings.catch_warnings():  # a replicate with no value in any group is NaN, as meant
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.array(means), axis=0)


def summarize_saliency(values: Dict[str, np.ndarray], preds: Sequence[int], class_name,
                       seed: int = 0, replicates: int = REPLICATES, protocol: str = RIVAL10) -> SaliencySummary:
    """The summary of per-image values (metric -> (N,)) grouped by predicted class.

    class_name: predicted index -> display name. protocol: how the values were computed (Hard
    ImageNet's runs also give its figures, `SaliencySummary.hard_imagenet`).
    """
    preds = np.asarray(preds, dtype=np.int64)
    n = preds.size
    one = np.ones((1, n))
    weights = stratified_weights(preds, replicates, seed) if n else np.zeros((replicates, 0))
    headline, image_mean = {}, {}
    for m in METRICS:
        v = np.asarray(values[m], dtype=np.float64)
        value = float(class_mean_of_means(v, preds, one)[0]) if n else float("nan")
        lo, hi = percentile_interval(class_mean_of_means(v, preds, weights)) if n else (float("nan"),) * 2
        headline[m] = {"value": value, "lo": lo, "hi": hi, "n": int(np.unique(preds[~np.isnan(v)]).size)}
        lo, hi = percentile_interval(mean_over_images(v, weights)) if n else (float("nan"),) * 2
        image_mean[m] = {"value": float(mean_over_images(v, one)[0]) if n else float("nan"), "lo": lo, "hi": hi,
                         "n": int((~np.isnan(v)).sum())}
        for entry, why in ((headline[m], too_few_to_resample(v, preds, classes=True)),
                           (image_mean[m], too_few_to_resample(v, preds, classes=False))):
            if why is not None:
                entry.update(lo=entry["value"], hi=entry["value"], degenerate=why)
    per_class = {}
    for p in np.unique(preds):
        members = preds == p
        per_class[class_name(int(p))] = {"images": int(members.sum()),
                                         **{m: _nanmean(np.asarray(values[m], dtype=np.float64)[members])
                                            for m in METRICS}}
    # an all-zero map has no precision (0/0) but an IoU; an image left out (Hard ImageNet's empty mask) has neither
    flat = int((np.isnan(np.asarray(values["precision"], dtype=np.float64))
                & ~np.isnan(np.asarray(values["iou"], dtype=np.float64))).sum())
    return SaliencySummary(headline, image_mean, per_class, images=n, flat=flat,
                           bootstrap={"replicates": replicates, "seed": seed, "stratified_by": "pred"},
                           protocol=protocol)


def too_few_to_resample(values: np.ndarray, preds: np.ndarray, classes: bool) -> Optional[str]:
    """Why a bootstrap stratified by predicted class says nothing of these values (None: it does).

    Of the mean over images (`classes` False): fewer than half of the images with a value share
    their predicted class with another one. Of the mean of per-class means (`classes` True):
    fewer than half of the predicted classes hold two images with a value. A class of one image is
    resampled into itself, so its mean, one draw as uncertain as any, adds no spread, and with most
    classes alone the interval is narrow while the images' values are not (8 photos, 4 of them in
    one class and 4 alone, read 0.461 [0.458, 0.463] with values from 0.06 to 0.91). The image
    rule does not see this: half the images may share one class."""
    ok = ~np.isnan(values)
    if not ok.any():
        return None
    _, counts = np.unique(preds[ok], return_counts=True)
    if classes:
        part, whole, what = int((counts >= 2).sum()), counts.size, "predicted classes hold more than one image"
    else:
        part, whole, what = int(counts[counts >= 2].sum()), int(ok.sum()), \
            "images share their predicted class with another"
    if 2 * part >= whole:
        return None
    return f"only {part} of {whole} {what}, and a class of one image is resampled into itself"


def _nanmean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")
