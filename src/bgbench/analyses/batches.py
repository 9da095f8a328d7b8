"""Batches of (items, images, masks) on a device, for the probes (decoding in a thread)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, List, Sequence, Tuple

import numpy as np

from ..data.images import decode_item, object_mask


def _decode(chunk):
    out = []
    for item, mask_ref in chunk:
        img = decode_item(item)
        out.append((item, img, object_mask(mask_ref, item.path, img.shape[:2])))
    return out


def masked_batches(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str) -> Iterator:
    """Yield (items, x (N,3,H,W) float [0,1], m (N,1,H,W) float {0,1}) of equal-size images."""
    import torch
    chunks = [pairs[i:i + batch_size] for i in range(0, len(pairs), batch_size)]
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(_decode, chunks[0]) if chunks else None
        for n in range(len(chunks)):
            decoded = pending.result()
            pending = pool.submit(_decode, chunks[n + 1]) if n + 1 < len(chunks) else None
            for group in _same_shape(decoded):
                items = [g[0] for g in group]
                x = torch.from_numpy(np.stack([g[1] for g in group])).to(device).permute(0, 3, 1, 2).float().div_(255)
                m = torch.from_numpy(np.stack([g[2] for g in group])).to(device).float().unsqueeze(1)
                yield items, x, m


def _same_shape(decoded: List[tuple]):
    start = 0
    for i in range(1, len(decoded) + 1):
        if i == len(decoded) or decoded[i][1].shape != decoded[start][1].shape:
            yield decoded[start:i]
            start = i
