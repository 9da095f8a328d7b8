"""ImageNet-W's watermark, drawn by the `imagenet-w` package itself (its `AddWatermark` transform and
its bundled font, SourceHanSerifSC-ExtraLight), never redrawn here.

Whac-A-Mole (`eval_shortcuts/eval_multiple_shortcuts.py`) inserts the transform after the resize,
the crop and `ToTensor`, before `Normalize`, with the crop's size (which sets the font's size: 36
px at 224). bgbench's models normalize inside, so a [0,1] image is exactly the point where the
watermark goes: `watermark_image` takes the decoded uint8 image as the model would be fed it,
makes it `ToTensor`'s float tensor, applies `AddWatermark(image_size=side)` to it, and returns the
result as uint8 (lossless: the transform's output is `ToTensor` of an 8-bit image).

The transform holds a FreeType font; the prefetching threads each build their own.
"""
from __future__ import annotations

import threading
from typing import Dict

import numpy as np

_local = threading.local()


def add_watermark(side: int):
    """imagenet_w's AddWatermark for images of `side` pixels, one per thread and size."""
    cache: Dict[int, object] = getattr(_local, "transforms", None) or {}
    if side not in cache:
        from imagenet_w import AddWatermark
        cache[side] = AddWatermark(image_size=int(side))
        _local.transforms = cache
    return cache[side]


def watermark_image(image: np.ndarray) -> np.ndarray:
    """An HxWx3 uint8 image with ImageNet-W's watermark, sized for its height (the crop's side)."""
    import torch
    x = torch.from_numpy(np.array(image, dtype=np.uint8)).permute(2, 0, 1).float().div(255)
    out = add_watermark(image.shape[0])(x)
    return out.mul(255).round().to(torch.uint8).permute(1, 2, 0).numpy()
