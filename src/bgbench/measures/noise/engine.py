"""The noise probe's engine: tensors in, per-image predictions out; no files, no store.

Gaussian noise goes on one region only (x + s·n·m), clamped to [0,1]: the foreground (m the
object mask), the background (1 − m), or one attribute's mask (region 'attr:<name>', only on the
images that have it).

Every image's draw has its own seed, derived from the run's seed, the image id, the region and
the level (`draws.draw_seed`), and is drawn on the CPU by numpy (`draws.image_noise`). So one
image's noisy copy is a function of those alone: the same for any batch size, device, order or
torchrun slice, and the report redraws exactly the copy that flipped a prediction
(`draws.noisy_copy`) without running a model or importing torch.
"""
from __future__ import annotations

from typing import Callable, Dict, Sequence

import numpy as np
import torch

from .draws import REGIONS, draw_seed, image_noise  # noqa: F401 (REGIONS: the object regions, re-exported)
from ..common.regions import Region


def masked_noise(where: torch.Tensor, level: float, kind: str, trials: int, seeds: Sequence[int]) -> torch.Tensor:
    """Noise (trials, N, 3, H, W) restricted to `where` ((N, 1, H, W) in {0,1}), image k drawn
    from `seeds[k]`.

    kind 'sigma': Gaussian with std `level`. kind 'l2': Gaussian rescaled so that each image's
    noise over its region has L2 norm `level` (pixel values in [0,1]), as RIVAL10's `l2_normalize`.
    """
    b, _, h, w = where.shape
    # drawn channels-last, the layout convolutions run fastest on (CPU and GPU)
    raw = torch.from_numpy(np.stack([image_noise(s, trials, h, w) for s in seeds], axis=1)) if b \
        else torch.zeros((trials, 0, h, w, 3))
    n = raw.to(device=where.device, dtype=where.dtype).permute(0, 1, 4, 2, 3) * where
    if kind == "l2":
        norm = n.flatten(2).norm(dim=2).clamp_min(1e-12)
        return n * (level / norm)[..., None, None, None]
    return n * level


def region_noise(mask: torch.Tensor, region: str, level: float, kind: str, trials: int,
                 seeds: Sequence[int]) -> torch.Tensor:
    """Noise (trials, N, 3, H, W) restricted to `region`, image k drawn from `seeds[k]`.

    mask: (N, 1, H, W) in {0,1}: the object mask for 'fg' (noise on it) and 'bg' (noise off it),
    the attribute's own mask for 'attr:<name>' (noise on it).
    """
    return masked_noise(1 - mask if region == "bg" else mask, level, kind, trials, seeds)


@torch.no_grad()
def region_predictions(predict: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                       regions: Sequence[Region], image_ids: Sequence[str], seed: int, levels: Sequence[float],
                       trials: int, kind: str, chunk: int = 0) -> Dict[str, torch.Tensor]:
    """region name -> predictions (level, trial, image of the region) of `predict` on noisy copies of `x`.

    x: (N, 3, H, W) in [0,1]; image_ids: the N images' ids (their draws' seeds); predict maps
    images to predicted labels. `chunk` bounds how many images go through one forward (default: N).
    """
    chunk = chunk or x.shape[0]
    out = {}
    for region in regions:
        idx = region.index.tolist()
        n = len(idx)
        preds_r = torch.empty(len(levels), trials, n, dtype=torch.long, device=x.device)
        if n:
            xs = x[region.index]
            for li, level in enumerate(levels):
                seeds = [draw_seed(seed, image_ids[k], region.name, level) for k in idx]
                noise = masked_noise(region.where, float(level), kind, trials, seeds)
                noisy = (xs.unsqueeze(0) + noise).clamp_(0, 1).flatten(0, 1)
                noisy = noisy.contiguous(memory_format=torch.channels_last)  # no copy when already so
                preds = torch.cat([predict(noisy[i:i + chunk]) for i in range(0, noisy.shape[0], chunk)])
                preds_r[li] = preds.view(trials, n)
        out[region.name] = preds_r
    return out


def noisy_copy(image: torch.Tensor, mask: torch.Tensor, image_id: str, seed: int, region: str, level: float,
               trial: int, trials: int, kind: str) -> torch.Tensor:
    """The noisy copy (3, H, W) in [0,1] that the probe fed the model for one image, region,
    level and trial (image: (3, H, W) in [0,1]; mask: (1, H, W), the object mask or, for an
    'attr:<name>' region, the attribute's; `trials`: the run's count, since the draw is made for
    all trials at once)."""
    noise = region_noise(mask[None].float(), region, float(level), kind, trials,
                         [draw_seed(seed, image_id, region, level)])
    return (image[None] + noise[trial]).clamp_(0, 1)[0]
