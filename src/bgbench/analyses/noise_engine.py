"""The noise probe's engine: tensors in, per-image correctness out; no files, no store.

Gaussian noise goes on the foreground only (x + s n m) or the background only (x + s n (1-m)),
clamped to [0,1]. Noise is drawn on the model's device, for every trial of a batch at once.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

REGIONS = ("fg", "bg")


def region_noise(shape, mask: torch.Tensor, region: str, level: float, kind: str,
                 generator: torch.Generator) -> torch.Tensor:
    """Noise for a (T, N, 3, H, W) stack restricted to `region` (mask: (N, 1, H, W) in {0,1}).

    kind 'sigma': Gaussian with std `level`. kind 'l2': Gaussian rescaled so that each image's
    noise over its region has L2 norm `level` (pixel values in [0,1]).
    """
    where = mask if region == "fg" else 1 - mask
    t, b, c, h, w = shape  # drawn channels-last, the layout convolutions run fastest on (CPU and GPU)
    raw = torch.randn((t, b, h, w, c), generator=generator, device=mask.device, dtype=mask.dtype)
    n = raw.permute(0, 1, 4, 2, 3) * where
    if kind == "l2":
        norm = n.flatten(2).norm(dim=2).clamp_min(1e-12)
        return n * (level / norm)[..., None, None, None]
    return n * level


@torch.no_grad()
def noisy_correct(predict: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, mask: torch.Tensor,
                  labels: torch.Tensor, levels: Sequence[float], trials: int, kind: str,
                  generator: torch.Generator, chunk: int = 0) -> torch.Tensor:
    """Correctness (region, level, trial, image) of `predict` on noisy copies of `x`.

    x: (N, 3, H, W) in [0,1]; mask: (N, 1, H, W); predict maps images to predicted labels.
    `chunk` bounds how many images go through one forward (default: N, one forward per trial).
    """
    n = x.shape[0]
    chunk = chunk or n
    out = torch.empty(len(REGIONS), len(levels), trials, n, dtype=torch.bool, device=x.device)
    for r, region in enumerate(REGIONS):
        for li, level in enumerate(levels):
            noise = region_noise((trials, *x.shape), mask, region, float(level), kind, generator)
            noisy = (x.unsqueeze(0) + noise).clamp_(0, 1).flatten(0, 1)
            noisy = noisy.contiguous(memory_format=torch.channels_last)  # no copy when already so
            preds = torch.cat([predict(noisy[i:i + chunk]) for i in range(0, noisy.shape[0], chunk)])
            out[r, li] = preds.view(trials, n) == labels
    return out
