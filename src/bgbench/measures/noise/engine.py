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

from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Callable, Dict, Optional, Sequence

import torch

from .draws import REGIONS, draw_seed, image_noise  # noqa: F401 (REGIONS: the object regions, re-exported)
from ..common.regions import Region


def stacked_draws(seeds: Sequence[int], trials: int, height: int, width: int, pool: Optional[Executor] = None,
                  pinned: bool = False) -> "Callable[[], torch.Tensor]":
    """The draws of several images, a (trials, N, H, W, 3) float32 CPU tensor with image k's from
    `seeds[k]` (channels last, the layout convolutions run fastest on, CPU and GPU): a function that
    returns them. With a thread pool the images are drawn in its threads (numpy's generators
    release the interpreter's lock while they fill an array), starting now: the caller runs a
    forward meanwhile and calls the function when it needs the draws. `pinned`: drawn into
    page-locked memory (for a GPU), whose copy to the card is queued, not waited for; the tensor
    itself is what is copied, so that torch's pinned-memory cache keeps it until the copy is done."""
    buffer = torch.empty((trials, len(seeds), height, width, 3), dtype=torch.float32, pin_memory=pinned)
    out = buffer.numpy()

    def one(k: int) -> None:
        out[:, k] = image_noise(seeds[k], trials, height, width)
    if pool is None:
        for k in range(len(seeds)):
            one(k)
        return lambda: buffer
    futures = [pool.submit(one, k) for k in range(len(seeds))]

    def done() -> torch.Tensor:
        for f in futures:
            f.result()
        return buffer
    return done


def masked_noise(where: torch.Tensor, level: float, kind: str, trials: int, seeds: Sequence[int],
                 raw: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Noise (trials, N, 3, H, W) restricted to `where` ((N, 1, H, W) in {0,1}), image k drawn
    from `seeds[k]` (`raw`: those draws already made, `stacked_draws`).

    kind 'sigma': Gaussian with std `level`. kind 'l2': Gaussian rescaled so that each image's
    noise over its region has L2 norm `level` (pixel values in [0,1]), as RIVAL10's `l2_normalize`.
    """
    b, _, h, w = where.shape
    if raw is None:
        raw = stacked_draws(seeds, trials, h, w)()
    n = raw.to(where.device, non_blocking=True).to(where.dtype).permute(0, 1, 4, 2, 3) * where
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


def draw_pool(workers: int) -> Optional[Executor]:
    """The threads that draw the noise of the next (region, level) while a forward runs (None for
    `workers` < 1: drawn in the caller). One pool per process, grown to the largest count asked."""
    global _POOL, _POOL_SIZE
    if workers < 1:
        return None
    if _POOL is None or _POOL_SIZE < workers:
        if _POOL is not None:
            _POOL.shutdown(wait=False)
        _POOL, _POOL_SIZE = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bgbench-noise"), workers
    return _POOL


_POOL: Optional[Executor] = None
_POOL_SIZE = 0


@torch.no_grad()
def region_predictions(predict: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                       regions: Sequence[Region], image_ids: Sequence[str], seed: int, levels: Sequence[float],
                       trials: int, kind: str, chunk: int = 0, workers: int = 0) -> Dict[str, torch.Tensor]:
    """region name -> predictions (level, trial, image of the region) of `predict` on noisy copies of `x`.

    x: (N, 3, H, W) in [0,1]; image_ids: the N images' ids (their draws' seeds); predict maps
    images to predicted labels. `chunk` bounds how many images go through one forward (default: N).
    `workers` threads draw the next (region, level)'s noise while this one's forwards run (0: every
    draw made in turn, in this thread); the draws, and so the predictions, are the same either way.
    """
    chunk = chunk or x.shape[0]
    pool = draw_pool(workers)
    h, w = x.shape[-2:]
    steps = [(region, li, float(level)) for region in regions if len(region.index)
             for li, level in enumerate(levels)]

    positions = {region.name: region.positions() for region in regions}  # once a region, not once a step

    def draw(step):
        region, _, level = step
        return stacked_draws([draw_seed(seed, image_ids[k], region.name, level) for k in positions[region.name]],
                             trials, h, w, pool, pinned=x.device.type == "cuda")
    out = {region.name: torch.empty(len(levels), trials, len(region.index), dtype=torch.long, device=x.device)
           for region in regions}
    upcoming = draw(steps[0]) if steps else None
    for s, (region, li, level) in enumerate(steps):
        raw = upcoming()
        upcoming = draw(steps[s + 1]) if s + 1 < len(steps) else None  # drawn during this step's forwards
        n = len(region.index)
        noise = masked_noise(region.where, level, kind, trials, (), raw=raw)
        noisy = (x[region.index].unsqueeze(0) + noise).clamp_(0, 1).flatten(0, 1)
        noisy = noisy.contiguous(memory_format=torch.channels_last)  # no copy when already so
        preds = torch.cat([predict(noisy[i:i + chunk]) for i in range(0, noisy.shape[0], chunk)])
        out[region.name][li] = preds.view(trials, n)
    return out

