"""The noise probe's draws, without torch: each image's Gaussian noise from its own seed, and the
noisy copy the probe fed the model, drawn again for the report.

Every image's draw has its own seed, derived from the run's seed, the image id, the region and
the level (`draw_seed`), and is numpy's standard normal from a PCG64 generator of that seed, in
float32, channels last: (trials, H, W, 3). So one image's noisy copy is a function of those alone
(the same for any batch size, device, order or torchrun slice), and the report redraws exactly the
copy that flipped a prediction (`noisy_copy`) with numpy alone, without importing torch.
"""
from __future__ import annotations

import hashlib

import numpy as np

#: How a run's noise was drawn, recorded in its config (`draws`): runs that say so can have any
#: noisy copy drawn again by `noisy_copy`.
DRAWS = "per image: seed, image id, region, level; numpy PCG64 standard normal, float32"
#: Runs of bgbench 0.1 before this module drew with torch's CPU generator (`torch_image_noise`).
TORCH_DRAWS = "per image: seed, image id, region, level (CPU)"
#: The object's regions: noise on the foreground, and on the background.
REGIONS = ("fg", "bg")


def draw_seed(seed: int, image_id: str, region: str, level: float) -> int:
    """The seed of one image's noise in one region at one level (63 bits of a sha256)."""
    key = f"{int(seed)}\x00{image_id}\x00{region}\x00{float(level)!r}".encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little") >> 1


def image_noise(seed: int, trials: int, height: int, width: int) -> np.ndarray:
    """One image's standard normal draws for every trial: (trials, H, W, 3) float32."""
    return np.random.Generator(np.random.PCG64(int(seed))).standard_normal((trials, height, width, 3),
                                                                          dtype=np.float32)


def torch_image_noise(seed: int, trials: int, height: int, width: int) -> np.ndarray:
    """The draws of a run recorded with TORCH_DRAWS (torch imported only for such a run)."""
    import torch
    return torch.randn((trials, height, width, 3), generator=torch.Generator().manual_seed(int(seed))).numpy()


def noisy_copy(image: np.ndarray, mask: np.ndarray, image_id: str, seed: int, region: str, level: float,
               trial: int, trials: int, kind: str, draws: str = DRAWS) -> np.ndarray:
    """The noisy copy (H, W, 3) uint8 that the probe fed the model for one image, region, level and
    trial, made with the probe's float32 arithmetic (`engine.masked_noise`).

    image: (H, W, 3) uint8; mask: (H, W), the object mask (for 'fg' and 'bg') or an attribute's
    mask (region 'attr:<name>'); trials: the run's count (one draw holds every trial)."""
    h, w = image.shape[:2]
    draw = torch_image_noise if draws == TORCH_DRAWS else image_noise
    raw = draw(draw_seed(seed, image_id, region, level), trials, h, w)[trial]
    m = np.asarray(mask, dtype=np.float32)[..., None]
    n = raw * (1 - m if region == "bg" else m)
    if kind == "l2":
        n = n * (np.float32(level) / max(np.linalg.norm(n.ravel()), np.float32(1e-12)))
    else:
        n = n * np.float32(level)
    x = image.astype(np.float32) / np.float32(255)
    return np.round(np.clip(x + n, 0, 1) * np.float32(255)).astype(np.uint8)
