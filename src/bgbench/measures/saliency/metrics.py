"""Saliency alignment with the object mask, per image, as RIVAL10's code computes it.

`g` is the Grad-CAM map as pytorch-grad-cam returns it (in [0,1], image size, NaN set to 0: see
`probing.gradcam.gradcam_maps`) and `m` the object mask (nonzero = object). The reference is
mmoayeri/RIVAL10 (`bg_fg_saliency.py`: fraction inside, mask coverage, average precision;
`utils.py`: IoU and Dice with eps, delta density). Each function here is that definition, its
edge cases included, because a measure is only comparable with the paper's when it is the same
computation:

- an all-zero map has IoU and Dice eps/(|m|+eps) (about 0), density 0, coverage 0 at every t and
  average precision |m|/|image| (what sklearn gives a constant score); its precision is 0/0, NaN,
  which RIVAL10's `np.nanmean` skips: the image is kept in every other mean.

Hard ImageNet (mmoayeri/HardImageNet, `saliency_analysis.py` lines 67-94) binarizes the map at 0.5
itself, not at 0.5 of its maximum (`absolute_iou_and_dice`); its delta density is RIVAL10's.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np

EPS = 1e-10  # RIVAL10's intersection_over_union_and_dice
BINARIZE_AT = 0.5  # of the map's maximum
COVERAGE_AT = (0.25, 0.5, 0.75)  # RIVAL10's compute_saliency_thresholds
METRICS = ("precision", "iou", "dice", "density_diff", "coverage_25", "coverage_50", "coverage_75", "ap")


def saliency_alignment(g: np.ndarray, mask: np.ndarray) -> Dict[str, float]:
    """Every RIVAL10 measure of one map against one mask, keyed as METRICS."""
    g = np.nan_to_num(np.asarray(g, dtype=np.float32), nan=0.0)
    m = (np.asarray(mask) > 0).astype(np.float32)
    iou, dice = iou_and_dice(binarize(g), m > 0)
    sals, inside = sorted_with_mask(g, m)  # one sort serves the coverage and the AP (ties: see AP)
    cov = mask_coverage(g, m, sorted_values=sals)
    out = {"precision": fraction_inside(g, m), "iou": iou, "dice": dice, "density_diff": delta_density(g, m),
           "ap": _average_precision_ascending(sals, inside)}
    out.update({f"coverage_{round(100 * t)}": c for t, c in zip(COVERAGE_AT, cov)})
    return {k: out[k] for k in METRICS}


def sorted_with_mask(g: np.ndarray, m: np.ndarray) -> tuple:
    """g's values sorted ascending, and whether each is on the object (m > 0) in that order; among
    equal values the flags' order is free (the AP and the coverage read only runs' ends).

    For a map of finite values >= 0 (every map bgbench measures), each value's float32 bits (a
    -0 read as +0) shifted left by one, with the object flag in the freed bit, sort as the
    values do: one sort of uint32 keys, which NumPy runs in SIMD, where an argsort and two
    gathers took 5x longer (0.70 against 0.15 ms for a 224-px map, benchmarks/README.md)."""
    flat, on = g.ravel(), m.ravel() > 0
    if flat.dtype == np.float32 and flat.size and flat.min() >= 0 and np.isfinite(flat.max()):
        keys = np.sort(((flat + np.float32(0)).view(np.uint32) << np.uint32(1)) | on.view(np.uint8))
        return (keys >> np.uint32(1)).view(np.float32), (keys & np.uint32(1)).astype(bool)
    order = np.argsort(flat)
    return flat[order], on[order]


def fraction_inside(g: np.ndarray, m: np.ndarray) -> float:
    """Σ(g·m)/Σg: the share of saliency on the object (NaN for an all-zero map, as 0/0)."""
    total = float(np.sum(g, dtype=np.float64))
    return float(np.sum(g * m, dtype=np.float64)) / total if total > 0 else float("nan")


def binarize(g: np.ndarray) -> np.ndarray:
    """RIVAL10's `binarize`: g/max(g), values above 0.5 set to 1, below to 0. A value exactly at
    0.5 stays 0.5, which still counts as 'on' (> 0) in the IoU, so the rule is g/max ≥ 0.5."""
    peak = g.max()
    if peak == 0:
        return g > 0
    return (g / peak) >= BINARIZE_AT


def iou_and_dice(on: np.ndarray, obj: np.ndarray) -> tuple:
    """IoU and Dice of a binarized map against a binary mask, with eps in numerator and denominator."""
    inter = float(np.sum(on & obj))
    union = float(np.sum(on | obj))
    return (inter + EPS) / (union + EPS), (2 * inter + EPS) / (union + inter + EPS)


def absolute_iou_and_dice(g: np.ndarray, m: np.ndarray) -> tuple:
    """Hard ImageNet's `intersection_over_union_and_dice`: the map and the mask each binarized at
    0.5 (g ≥ 0.5 is on, NaN is off), IoU and Dice with eps in numerator and denominator."""
    return iou_and_dice(np.nan_to_num(np.asarray(g, dtype=np.float32), nan=0.0) >= BINARIZE_AT,
                        np.asarray(m) >= BINARIZE_AT)


def delta_density(g: np.ndarray, m: np.ndarray) -> float:
    """Σ(g·m)/Σm − Σ(g·(1−m))/Σ(1−m): mean saliency on the object minus on the background."""
    inside, outside = float(m.sum()), float((1 - m).sum())
    if inside == 0 or outside == 0:
        return float("nan")
    return float(np.sum(g * m, dtype=np.float64)) / inside - float(np.sum(g * (1 - m), dtype=np.float64)) / outside


def saliency_thresholds(g: np.ndarray, fractions: Sequence[float] = COVERAGE_AT,
                        sorted_values: Optional[np.ndarray] = None) -> list:
    """RIVAL10's `compute_saliency_thresholds`: for each t, the value of g (sorted ascending) at
    which the running sum first exceeds t·Σg; 1 for every t when Σg = 0.

    The running sum is float32, like RIVAL10's loop over a float32 map, compared with t·Σg in
    float64 (NumPy 1.x made a Python float times a float32 scalar a float64). RIVAL10's loop reads
    one new pixel per milestone; when a single pixel crosses two milestones its loop runs past the
    last pixel (an IndexError; that pixel would hold over a quarter of the mass), and this takes
    that pixel's value for both. In every other case the two agree.
    """
    sals = np.sort(np.asarray(g, dtype=np.float32).ravel()) if sorted_values is None else sorted_values
    total = np.sum(sals)
    if total == 0:
        return [1.0] * len(fractions)
    running = np.cumsum(sals, dtype=np.float32).astype(np.float64)
    goals = np.array([float(t) * float(total) for t in fractions])
    first = np.minimum(np.searchsorted(running, goals, side="right"), sals.size - 1)
    return [float(sals[k]) for k in first]


def mask_coverage(g: np.ndarray, m: np.ndarray, fractions: Sequence[float] = COVERAGE_AT,
                  sorted_values: Optional[np.ndarray] = None) -> list:
    """RIVAL10's `compute_mask_coverage`: keep the pixels with g ≥ the threshold of each t (and
    g > 0); the share of the mask they cover."""
    area, positive = float(m.sum()), g > 0
    return [float(np.sum(((g >= np.float32(thresh)) & positive) * m)) / area if area else float("nan")
            for thresh in saliency_thresholds(g, fractions, sorted_values)]


def _average_precision_ascending(s: np.ndarray, y: np.ndarray) -> float:
    """Average precision (sklearn's `average_precision_score`: Σ_k (R_k − R_{k−1})·P_k over the
    distinct score thresholds, highest first, no interpolation; NaN when there is no positive) of
    scores `s` sorted ascending, with their positives `y` in that order.
    Ties form runs of equal scores; only each run's end counts, so the order inside one is moot."""
    if not y.any():
        return float("nan")
    s, y = s[::-1], y[::-1]  # highest first
    last = np.r_[np.flatnonzero(np.diff(s) != 0), y.size - 1]  # the last index of each run of equal scores
    # true positives up to each run's end: counted in integers (a float64 count of 0s and 1s is exact
    # below 2**53, so the same numbers), then float64 for the ratios
    tps = np.cumsum(y, dtype=np.int64)[last].astype(np.float64)
    precision = tps / (last + 1)
    recall = tps / tps[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))
