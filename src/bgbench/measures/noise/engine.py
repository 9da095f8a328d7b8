"""The noise probe's engine: tensors in, per-image predictions out; no files, no store.

Gaussian noise goes on one region only (x + s·n·m), clamped to [0,1]: the foreground (m the
object mask), the background (1 − m), or one attribute's mask (region 'attr:<name>', only on the
images that have it).

Every draw has its own seed, derived from the run's seed, the image id, the level and what it
goes on (`draws.draw_seed`, `draws.draw_region`: the foreground and the background are cut from
one field), and is the counter-based generator of `draws`: integer arithmetic and a table
lookup, which the card computes itself (`device_draws`) bit for bit as numpy does on the CPU
(`stacked_draws`, in threads while the forward runs). So one image's noisy copy is a function of
the seeds alone: the same for any batch size, device, order or torchrun slice, and the report
redraws exactly the copy that flipped a prediction (`draws.noisy_copy`) without running a model
or importing torch.
"""
from __future__ import annotations

import functools
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch

from .draws import (MULTIPLIERS, QUANTILE_BITS, REGIONS, draw_region, draw_seed, image_noise,  # noqa: F401
                    quantiles, seed_halves)  # REGIONS: the object regions, re-exported
from ..common.regions import Region
from ...errors import BgbenchError
from ...evaluation.feed import to_device


def stacked_draws(seeds: Sequence[int], trials: int, height: int, width: int, pool: Optional[Executor] = None,
                  pinned: bool = False) -> "Callable[[], torch.Tensor]":
    """The draws of several images made by numpy on the host, a (trials, N, H, W, 3) float32 CPU
    tensor with image k's from `seeds[k]` (channels last, the layout convolutions run fastest on):
    a function that returns them. With a thread pool the images are drawn in its threads (numpy
    releases the interpreter's lock in its array arithmetic), starting now: the caller runs a
    forward meanwhile and calls the function when it needs the draws (without a pool they are made
    in that call). `pinned`: drawn into
    page-locked memory, whose copy to a card is queued, not waited for."""
    buffer = torch.empty((trials, len(seeds), height, width, 3), dtype=torch.float32, pin_memory=pinned)
    out = buffer.numpy()

    def one(k: int) -> None:
        out[:, k] = image_noise(seeds[k], trials, height, width)
    drawn = (map if pool is None else pool.map)(one, range(len(seeds)))  # a pool's map submits every draw now

    def done() -> torch.Tensor:
        list(drawn)  # every draw made (without a pool, here), and its error raised
        return buffer
    return done


def _lowbias32_(x: torch.Tensor) -> torch.Tensor:
    """`draws.lowbias32` on int32 in place: a logical shift is the arithmetic one masked, and an
    int32 product wraps to the same low 32 bits as the uint32 one."""
    for shift, multiplier in ((16, MULTIPLIERS[0]), (15, MULTIPLIERS[1]), (16, None)):
        x.bitwise_xor_(torch.bitwise_right_shift(x, shift).bitwise_and_((1 << (32 - shift)) - 1))
        if multiplier is not None:
            x.mul_(multiplier - (1 << 32) if multiplier >= 1 << 31 else multiplier)  # its bits as an int32
    return x


@functools.lru_cache(maxsize=None)
def _quantile_table(device: torch.device) -> torch.Tensor:
    """`draws.quantiles` on `device` (one copy a device)."""
    return to_device(torch.from_numpy(quantiles().copy()), device)


@functools.lru_cache(maxsize=8)
def _counters(device: torch.device, count: int) -> torch.Tensor:
    """0 .. count - 1 as int32 on `device`, kept for the few draw sizes a run asks for."""
    return torch.arange(count, dtype=torch.int32, device=device)


def device_keys(seeds: Sequence[int], device: torch.device) -> torch.Tensor:
    """The seeds' two 32-bit halves, (2, len(seeds)) int32 on `device`, moved in one copy that the
    host does not wait for (from page-locked memory to a CUDA card)."""
    halves = np.array([seed_halves(s) for s in seeds], dtype=np.uint32).reshape(-1, 2).T.copy()
    return to_device(torch.from_numpy(halves.view(np.int32)), device)


def device_draws(keys: torch.Tensor, trials: int, height: int, width: int) -> torch.Tensor:
    """The draws of several images made where `keys` ((2, N) int32, `device_keys`) lie, a (trials,
    N, H, W, 3) float32 tensor: `draws.image_noise` of each image's seed, bit for bit, in some 25
    elementwise operations on the card and no work for the host."""
    device, n = keys.device, keys.shape[1]
    count = trials * height * width * 3
    if count >= 1 << 31:
        raise BgbenchError(f"noise: a draw of {trials} trials of {height}x{width} images has {count:,} values, "
                           "more than the generator counts (2^31); use fewer --trials or smaller images")
    table = _quantile_table(device)
    x = torch.bitwise_xor(_counters(device, count).view(trials, 1, height, width, 3), keys[0].view(1, n, 1, 1, 1))
    _lowbias32_(x).bitwise_xor_(keys[1].view(1, n, 1, 1, 1))
    _lowbias32_(x).bitwise_right_shift_(32 - QUANTILE_BITS).bitwise_and_((1 << QUANTILE_BITS) - 1)
    return table.index_select(0, x.view(-1)).view(x.shape)  # int32 indices as they are: no int64 copy


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
    """The threads that draw the next level's noise on the CPU while a forward runs (None for
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
                       trials: int, kind: str, chunk: int = 0, workers: int = 0,
                       on_device: Optional[bool] = None, empty_is_wrong: bool = False) -> Dict[str, torch.Tensor]:
    """region name -> predictions (level, trial, image of the region) of `predict` on noisy copies of `x`.

    x: (N, 3, H, W) in [0,1]; image_ids: the N images' ids (their draws' seeds); predict maps
    images to predicted labels. `chunk` bounds how many images go through one forward (default: N).
    Regions cut from one field (the foreground and the background) are noised level by level from
    one draw. Off the CPU the draws are made on the device; on the CPU, `workers` threads draw the
    next level's noise while this one's forwards run (0: every draw made in turn, in this thread).
    `on_device` chooses (default: off the CPU). The draws, and so the predictions, are the same
    either way.

    `empty_is_wrong`, with kind 'l2': an image whose region is empty has no prediction (-1), so it
    counts as wrong, as in Hard ImageNet's `rfs.py`, where `l2_normalize` divides the empty noise
    by its zero norm and the model's argmax over the NaN logits is ImageNet class 0, none of its
    15. Without it such an image's noise is zero and the clean image is scored.
    """
    chunk = chunk or x.shape[0]
    h, w = x.shape[-2:]
    fields: Dict[str, List[Region]] = {}  # the regions cut from each field, in the order given
    for region in regions:
        if len(region.index):
            fields.setdefault(draw_region(region.name), []).append(region)
    steps = [(name, li, float(level)) for name in fields for li, level in enumerate(levels)]
    positions = {name: members[0].positions() for name, members in fields.items()}  # once a field
    for name, members in fields.items():
        if any(r.positions() != positions[name] for r in members[1:]):
            raise ValueError(f"regions {[r.name for r in members]} share a field but not their images")
    seeds = [[draw_seed(seed, image_ids[k], name, level) for k in positions[name]] for name, _, level in steps]
    if on_device is None:
        on_device = x.device.type != "cpu"
    if not on_device:
        pool = draw_pool(workers)

        def draw(s: int) -> Callable[[], torch.Tensor]:
            return stacked_draws(seeds[s], trials, h, w, pool, pinned=x.device.type == "cuda")
    else:  # every step's keys in one copy; the card draws
        keys = device_keys([v for step in seeds for v in step], x.device)
        starts = np.cumsum([0] + [len(step) for step in seeds])

        def draw(s: int) -> Callable[[], torch.Tensor]:  # made when asked for: the card's queue runs in order
            # anyway, and a draw made ahead would only hold a second one in its memory
            return lambda: device_draws(keys[:, starts[s]:starts[s + 1]], trials, h, w)
    out = {region.name: torch.empty(len(levels), trials, len(region.index), dtype=torch.long, device=x.device)
           for region in regions}
    upcoming = draw(0) if steps else None
    for s, (name, li, level) in enumerate(steps):
        raw = upcoming()
        upcoming = draw(s + 1) if s + 1 < len(steps) else None  # on the CPU, drawn by threads during these forwards
        for region in fields[name]:
            n = len(region.index)
            noise = masked_noise(region.where, level, kind, trials, (), raw=raw)
            noisy = (x[region.index].unsqueeze(0) + noise).clamp_(0, 1).flatten(0, 1)
            noisy = noisy.contiguous(memory_format=torch.channels_last)  # no copy when already so
            preds = torch.cat([predict(noisy[i:i + chunk]) for i in range(0, noisy.shape[0], chunk)]).view(trials, n)
            if empty_is_wrong and kind == "l2":  # a select, not a boolean index: the card's queue is not waited for
                preds = torch.where(region.where.flatten(1).sum(1).view(1, n) == 0, -1, preds)
            out[region.name][li] = preds
    return out
