"""Spurious-feature discovery (RIVAL10 §5 after Salient ImageNet): the pure parts.

Salient ImageNet (`singlasahil14/salient_imagenet`, `utils.topk_predictive_features`) ranks the
penultimate features j of class c by their importance

    FI(c, j) = mean over the class's images x of  w[c, j] * r_j(x)  =  w[c, j] * mean r_j(x),

the head's weight times the mean activation, over the images the model *predicts* as c (the
paper's grouping; by true label on request), and keeps the top k. Each top feature's images are
the class's n most activating ones (largest r_j(x)). Its activation map on an image is channel j
of the last feature map, upsampled bilinearly to the image (cv2.resize there, divided by its
maximum, which no share below depends on).

bgbench then measures where that map's mass lies: the background share Σ a·(1−m) / Σ a of the
upsampled map a (negative activations, none after a ReLU, count as 0) against the object mask m,
beside the background's share of the image Σ(1−m)/HW, which is what a map spread evenly would get.
A feature is a **spurious candidate** when its mean background share over its top images exceeds
the threshold: by default the background's mean area share over the same images, i.e. its map is
denser on the background than on the object (RIVAL10's Δdensity below 0); or a fixed share. A
difference below SHARE_TOLERANCE is float rounding, not a difference: an evenly spread map (a 1x1
feature grid) is never a candidate under the default rule.

Upsampling is linear, so Σ a·w over the image equals Σ over cells of the small map times Uᵀw (U
the bilinear upsampling, separable into a row and a column matrix): the shares of every channel
come from two weighted sums of the small map, with no image-size map ever built.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

#: Shares are sums of float32 activations (accumulated in float64); closer than this, two shares are equal.
SHARE_TOLERANCE = 1e-6


@functools.lru_cache(maxsize=16)
def upsampling_matrix(cells: int, pixels: int, device):
    """(pixels, cells) float64: 1-D linear interpolation as cv2.resize INTER_LINEAR and torch's
    bilinear (align_corners=False) upsample, built by upsampling the unit vectors; once a shape and
    device (every batch of a run asks for the same two)."""
    import torch
    import torch.nn.functional as F
    eye = torch.eye(cells, device=device, dtype=torch.float64).reshape(cells, 1, cells, 1)
    up = F.interpolate(eye, size=(pixels, 1), mode="bilinear", align_corners=False)
    return up[:, 0, :, 0].T.contiguous()


def background_shares(maps, masks):
    """(N, D): the share of each channel's upsampled, ReLU'd map that lies off the object (NaN
    for a map that is zero everywhere). maps: (N, D, h, w); masks: (N, H, W) float {0,1}.

    Σ_pixels up(a)·(1−m) = Σ_cells a·Uᵀ(1−m), and Σ_pixels up(a) = Σ_cells a·Uᵀ1."""
    import torch
    positive = maps.double().clamp(min=0)
    masks = masks.double()
    rows = upsampling_matrix(maps.shape[-2], masks.shape[1], masks.device)  # (H, h)
    cols = upsampling_matrix(maps.shape[-1], masks.shape[2], masks.device)  # (W, w)
    background = rows.T @ (1 - masks) @ cols  # Uᵀ(1−m): (N, h, w)
    everywhere = rows.sum(dim=0)[:, None] * cols.sum(dim=0)[None, :]  # Uᵀ1: (h, w)
    off = torch.einsum("ndhw,nhw->nd", positive, background)
    total = torch.einsum("ndhw,hw->nd", positive, everywhere)
    return torch.where(total > 0, off / total.clamp(min=torch.finfo(total.dtype).tiny), torch.nan)


@dataclass
class RankedFeature:
    """One of a class's top features and where its activation map lies on its top images."""

    class_index: int
    rank: int  # 1: the largest contribution
    feature: int
    contribution: float  # weight x mean activation: its part of the class logit, on average
    weight: float
    mean_activation: float
    images: int  # images in the class's group
    top: List[int]  # indices of its most activating images, most first
    top_activations: List[float]
    top_shares: List[Optional[float]]  # background share of each top image's map (None: a zero map)
    bg_share: Optional[float]  # mean of top_shares that exist
    bg_area: float  # mean background area share of the same images (a uniform map's share)
    spurious: bool


def spurious(bg_share: Optional[float], bg_area: float, threshold: Optional[float]) -> bool:
    """A spurious candidate: more of the map's mass on the background than `threshold`, or, by
    default (None), than the background's share of the image (denser off the object than on it)."""
    if bg_share is None:
        return False
    return bg_share > (bg_area if threshold is None else threshold) + SHARE_TOLERANCE


def rank_features(pooled: np.ndarray, groups: np.ndarray, weight: np.ndarray, shares: np.ndarray,
                  areas: np.ndarray, top_features: int, top_images: int,
                  threshold: Optional[float] = None) -> List[RankedFeature]:
    """Every group's top features (groups in ascending order, then by rank).

    pooled: (N, D) penultimate features; groups: (N,) class index of each image (predicted or
    true); weight: (C, D) the head; shares: (N, D) background shares (NaN for zero maps); areas:
    (N,) background area shares. Ties go to the lower feature index and to the earlier image.
    """
    out: List[RankedFeature] = []
    for c in np.unique(groups):
        members = np.flatnonzero(groups == c)
        mean = pooled[members].astype(np.float64).mean(axis=0)
        w = weight[int(c)].astype(np.float64)
        importance = w * mean
        for rank, j in enumerate(np.argsort(-importance, kind="stable")[:top_features], start=1):
            order = members[np.argsort(-pooled[members, j], kind="stable")[:top_images]]
            top_shares = [None if math.isnan(s) else float(s) for s in shares[order, j]]
            known = [s for s in top_shares if s is not None]
            share = float(np.mean(known)) if known else None
            area = float(np.mean(areas[order]))
            out.append(RankedFeature(
                class_index=int(c), rank=rank, feature=int(j), contribution=float(importance[j]),
                weight=float(w[j]), mean_activation=float(mean[j]), images=int(members.size),
                top=[int(i) for i in order], top_activations=[float(v) for v in pooled[order, j]],
                top_shares=top_shares, bg_share=share, bg_area=area, spurious=spurious(share, area, threshold)))
    return out


def gallery_order(ranked: Sequence[RankedFeature], limit: int) -> List[int]:
    """The classes that get a gallery: the `limit` largest groups (ties: lower class index), in
    class order."""
    sizes = {f.class_index: f.images for f in ranked}
    return sorted(sorted(sizes, key=lambda c: (-sizes[c], c))[:limit])
