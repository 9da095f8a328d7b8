"""Penultimate-layer activation maps: the channels of a network's last feature map.

These are the features a classifier's pooling and linear head read (timm's `forward_features`),
one map per channel, so that a feature can be located in the image: RIVAL10's feature attribution
(§6: which features overlap an attribute's mask) and the spurious-feature probe (§5: a feature's
mass on the object vs the background) both start here. A vision transformer's patch tokens are
reshaped to their grid (the class/prefix tokens dropped), as for Grad-CAM (`probing.gradcam`).

Maps are upsampled to the image bilinearly (`upsample`) and, for an overlap, binarized at 0.5 of
each map's maximum (`binarize`, RIVAL10's rule; an all-zero map is empty).
"""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn.functional as F

from ..errors import BgbenchError
from .gradcam import token_layout

BINARIZE_AT = 0.5  # of each map's maximum, as RIVAL10's `binarize`


def feature_maps(model, x: torch.Tensor) -> torch.Tensor:
    """(N, K, h, w) activations of the last feature map of `model` (a `BgModel`) on [0,1] images x."""
    net = model.net
    if not hasattr(net, "forward_features"):
        raise BgbenchError(f"{model.spec.name}: feature maps need a timm network (its forward_features); "
                           f"this one has none")
    return as_grid(net, net.forward_features(model.normalize(x)), tuple(x.shape[-2:]), model.spec.name)


def as_grid(net, raw: torch.Tensor, image_hw: Tuple[int, int], name: str, who: str = "feature attribution"
            ) -> torch.Tensor:
    """A timm network's `forward_features` output as (N, K, h, w): a channels-first map as it is,
    a channels-last one (timm's `output_fmt` NHWC, e.g. MambaOut) permuted, a vision transformer's
    patch tokens (N, T, D) reshaped to the patch grid with its class/prefix tokens dropped. The
    spurious-feature probe (`feature_head.LinearHead.grid`) and RIVAL10's attribution both read
    maps through here. `who` names the caller in the one-line errors."""
    if raw.dim() == 4:
        return raw.permute(0, 3, 1, 2) if str(getattr(net, "output_fmt", "NCHW")).upper() == "NHWC" else raw
    tokens = token_layout(net) if raw.dim() == 3 else None
    if tokens is None:
        raise BgbenchError(f"{who} needs a spatial feature map; {name}'s forward_features gives shape "
                           f"{tuple(raw.shape)}")
    prefix, (ph, pw) = tokens
    gh, gw = image_hw[0] // ph, image_hw[1] // pw
    n, count, d = raw.shape
    if count - prefix != gh * gw:
        raise BgbenchError(f"{name} gives {count} tokens, not {prefix} prefix + {gh}x{gw} patch tokens")
    return raw[:, prefix:].reshape(n, gh, gw, d).permute(0, 3, 1, 2)


def upsample(maps: torch.Tensor, image_hw: Tuple[int, int]) -> torch.Tensor:
    """(N, K, h, w) maps resized to the image (bilinear, corners not aligned, as cv2.resize)."""
    return F.interpolate(maps.float(), size=tuple(image_hw), mode="bilinear", align_corners=False)


def binarize(maps: torch.Tensor) -> torch.Tensor:
    """(..., H, W) bool: at least 0.5 of the map's maximum; an all-zero (or negative) map is empty."""
    peak = maps.flatten(-2).amax(dim=-1)[..., None, None]
    return (maps >= BINARIZE_AT * peak) & (peak > 0)
