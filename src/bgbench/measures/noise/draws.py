"""The noise probe's draws, without torch: each image's Gaussian noise from its own seed, and the
noisy copy the probe fed the model, drawn again for the report.

Every draw has its own seed, derived from the run's seed, the image id, the level and what the
noise goes on (`draw_seed`): the object's two regions share one field, since the foreground and
the background are disjoint (a field of independent draws restricted to two disjoint regions
gives two independent noises, as Hard ImageNet's `rfs.py` draws them), and each attribute has
its own.

The field is a counter-based generator (`DRAWS`): value i of a draw of shape (trials, H, W, 3) is
the standard normal quantile at the top 20 bits of `lowbias32(lowbias32(i ^ k0) ^ k1)` (Chris
Wellons' hash; k0, k1 the seed's two halves), from a table of the 2^20 quantiles at (j + 0.5) /
2^20 (scipy's `ndtri`, float32). Integer arithmetic and a table lookup only: the GPU computes
bit for bit what numpy computes here, so the probe draws on the card (`engine.device_draws`)
where numpy's generator would keep the host busy (74 ms an image at RIVAL10's grid), and a draw
is a function of its seed alone (the same for any batch size, device, order or torchrun slice).
The report redraws the copy that flipped a prediction (`noisy_copy`) with numpy alone.
"""
from __future__ import annotations

import functools
import hashlib
from typing import Tuple

import numpy as np

#: How a run's noise was drawn, recorded in its config (`draws`): the runs whose noisy copies
#: `noisy_copy` draws again.
DRAWS = ("per image: seed, image id, level, and 'object' (fg and bg share one field) or the attribute; "
         "lowbias32 twice on the counter, 2^20 normal quantiles, float32")
#: The object's regions: noise on the foreground, and on the background.
REGIONS = ("fg", "bg")
#: The name whose seed keys the object regions' shared field.
OBJECT = "object"
#: log2 of the quantile table's length: the top QUANTILE_BITS bits of a hash pick a quantile.
QUANTILE_BITS = 20
#: lowbias32's multipliers (hash-prospector's README).
MULTIPLIERS = (0x7FEB352D, 0x846CA68B)


def draw_seed(seed: int, image_id: str, region: str, level: float) -> int:
    """The seed of one image's noise on one region (its draw's name, `draw_region`) at one level
    (63 bits of a sha256)."""
    key = f"{int(seed)}\x00{image_id}\x00{region}\x00{float(level)!r}".encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little") >> 1


def draw_region(region: str) -> str:
    """The name in the seed of the field that `region`'s noise is cut from: 'object' for the
    foreground and the background (one field), the region's own name for an attribute."""
    return OBJECT if region in REGIONS else region


def seed_halves(seed: int) -> Tuple[int, int]:
    """The two 32-bit keys of a seed: its low and its high half."""
    return int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF


@functools.lru_cache(maxsize=1)
def quantiles() -> np.ndarray:
    """The standard normal's quantiles at (j + 0.5) / 2^QUANTILE_BITS, j = 0 .. 2^QUANTILE_BITS - 1
    (float32, ±4.90 at the ends): the values a hash's top bits pick."""
    from scipy.special import ndtri
    n = 1 << QUANTILE_BITS
    table = ndtri((np.arange(n, dtype=np.float64) + 0.5) / n).astype(np.float32)
    table.flags.writeable = False
    return table


def lowbias32(x: np.ndarray) -> np.ndarray:
    """Wellons' lowbias32 on a uint32 array, in place (and returned)."""
    x ^= x >> np.uint32(16)
    x *= np.uint32(MULTIPLIERS[0])
    x ^= x >> np.uint32(15)
    x *= np.uint32(MULTIPLIERS[1])
    x ^= x >> np.uint32(16)
    return x


def image_noise(seed: int, trials: int, height: int, width: int) -> np.ndarray:
    """One draw's standard normal values for every trial: (trials, H, W, 3) float32, value i (in
    that order) the quantile picked by lowbias32(lowbias32(i ^ k0) ^ k1)."""
    k0, k1 = seed_halves(seed)
    x = np.arange(trials * height * width * 3, dtype=np.uint32)
    x ^= np.uint32(k0)
    lowbias32(x)
    x ^= np.uint32(k1)
    lowbias32(x)
    x >>= np.uint32(32 - QUANTILE_BITS)
    return quantiles()[x].reshape(trials, height, width, 3)


def noisy_copy(image: np.ndarray, mask: np.ndarray, image_id: str, seed: int, region: str, level: float,
               trial: int, trials: int, kind: str) -> np.ndarray:
    """The noisy copy (H, W, 3) uint8 that the probe fed the model for one image, region, level and
    trial, made with the probe's float32 arithmetic (`engine.masked_noise`).

    image: (H, W, 3) uint8; mask: (H, W), the object mask (for 'fg' and 'bg') or an attribute's
    mask (region 'attr:<name>'); trials: the run's count (one draw holds every trial)."""
    h, w = image.shape[:2]
    raw = image_noise(draw_seed(seed, image_id, draw_region(region), level), trials, h, w)[trial]
    m = np.asarray(mask, dtype=np.float32)[..., None]
    n = raw * (1 - m if region == "bg" else m)
    if kind == "l2":
        n = n * (np.float32(level) / max(np.linalg.norm(n.ravel()), np.float32(1e-12)))
    else:
        n = n * np.float32(level)
    x = image.astype(np.float32) / np.float32(255)
    return np.round(np.clip(x + n, 0, 1) * np.float32(255)).astype(np.uint8)
