"""The noise probe's engine: tensors in, per-image correctness out; no files, no store.

Gaussian noise goes on one region only (x + s·n·m), clamped to [0,1]: the foreground (m the
object mask), the background (1 − m), or one attribute's mask (only on the images that have it).

Each image's noise is drawn once per trial from a generator seeded by (seed, image id) and is
shared by its regions and levels, as RIVAL10 shares one draw between the foreground and the
background: an image's rows therefore depend on nothing else in its batch, so any batching and
any split of the images over processes give the very same rows.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Dict, Sequence

import torch

from .noise_levels import ATTRIBUTE_PREFIX  # noqa: F401 (re-exported: an attribute's region name)


@dataclass
class Region:
    """Where noise goes: the images of the batch it applies to (`index`) and their masks."""

    name: str
    index: torch.Tensor  # (n,) positions in the batch
    where: torch.Tensor  # (n, 1, H, W) in {0,1}


def image_seed(seed: int, image_id: str) -> int:
    """A 63-bit seed for one image's noise: a function of the run's seed and the image id alone."""
    digest = hashlib.sha256(f"{int(seed)}\0{image_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def image_noise(image_ids: Sequence[str], seed: int, trials: int, shape_chw, device, dtype=torch.float32
                ) -> torch.Tensor:
    """(trials, N, C, H, W) standard normal noise, image k's from its own generator."""
    c, h, w = shape_chw
    out = torch.empty((trials, len(image_ids), c, h, w), device=device, dtype=dtype)
    gen = torch.Generator(device=device)
    for k, image_id in enumerate(image_ids):
        gen.manual_seed(image_seed(seed, image_id))
        # drawn channels-last, the layout convolutions run fastest on (CPU and GPU)
        out[:, k] = torch.randn((trials, h, w, c), generator=gen, device=device, dtype=dtype).permute(0, 3, 1, 2)
    return out


def region_noise(raw: torch.Tensor, where: torch.Tensor, level: float, kind: str) -> torch.Tensor:
    """Noise for a (T, N, 3, H, W) draw restricted to `where` ((N, 1, H, W) in {0,1}).

    kind 'sigma': Gaussian with std `level`. kind 'l2': rescaled so that each image's noise over
    its region has L2 norm `level` (pixel values in [0,1]), as RIVAL10's `l2_normalize`.
    """
    n = raw * where
    if kind == "l2":
        norm = n.flatten(2).norm(dim=2).clamp_min(1e-12)
        return n * (level / norm)[..., None, None, None]
    return n * level


def object_regions(mask: torch.Tensor) -> list:
    """The foreground and the background of every image of a batch (mask: (N, 1, H, W))."""
    every = torch.arange(mask.shape[0], device=mask.device)
    return [Region("fg", every, mask), Region("bg", every, 1 - mask)]


@torch.no_grad()
def noisy_correct(predict: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, regions: Sequence[Region],
                  labels: torch.Tensor, levels: Sequence[float], trials: int, kind: str, noise: torch.Tensor,
                  chunk: int = 0) -> Dict[str, torch.Tensor]:
    """region name -> correctness (level, trial, image of the region) of `predict` on noisy copies of `x`.

    x: (N, 3, H, W) in [0,1]; noise: (trials, N, 3, H, W) (`image_noise`); predict maps images to
    predicted labels. `chunk` bounds how many images go through one forward (default: N).
    """
    chunk = chunk or x.shape[0]
    out = {}
    for region in regions:
        n = int(region.index.numel())
        ok = torch.empty(len(levels), trials, n, dtype=torch.bool, device=x.device)
        if n:
            xs, raw, ys = x[region.index], noise[:, region.index], labels[region.index]
            for li, level in enumerate(levels):
                noisy = (xs.unsqueeze(0) + region_noise(raw, region.where, float(level), kind)).clamp_(0, 1)
                noisy = noisy.flatten(0, 1).contiguous(memory_format=torch.channels_last)
                preds = torch.cat([predict(noisy[i:i + chunk]) for i in range(0, noisy.shape[0], chunk)])
                ok[li] = preds.view(trials, n) == ys
        out[region.name] = ok
    return out
