"""Batches of (items, images, masks) on a device, for the probes (decoding ahead in threads)."""
from __future__ import annotations

from contextlib import closing
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..data.images import decode_item, object_mask
from ..data.prefetch import prefetched, resolve_workers


def _decode(chunk, attributes=None):
    out = []
    for item, mask_ref in chunk:
        img = decode_item(item)
        parts = attributes.masks(item, img.shape[:2]) if attributes is not None else {}
        out.append((item, img, object_mask(mask_ref, item.path, img.shape[:2]), parts))
    return out


def _decoded(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str, workers: Optional[int] = None,
             attributes=None) -> Iterator[List[tuple]]:
    """Decoded chunks of `batch_size` pairs, the next ones decoding while the caller works."""
    chunks = [pairs[i:i + batch_size] for i in range(0, len(pairs), batch_size)]
    with closing(prefetched(chunks, lambda chunk: _decode(chunk, attributes),
                            resolve_workers(workers, device))) as decoded:
        for chunk in decoded:
            yield from _same_shape(chunk)


def _tensors(group, device: str):
    import torch
    x = torch.from_numpy(np.stack([g[1] for g in group])).to(device, non_blocking=True).permute(0, 3, 1, 2)
    x = x.float().div_(255)
    m = torch.from_numpy(np.stack([g[2] for g in group])).to(device, non_blocking=True).float().unsqueeze(1)
    return x, m


def masked_batches(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str,
                   workers: Optional[int] = None) -> Iterator:
    """Yield (items, x (N,3,H,W) float [0,1], m (N,1,H,W) float {0,1}) of equal-size images;
    `workers` threads decode ahead (default: `data.prefetch.default_workers(device)`)."""
    for group in _decoded(pairs, batch_size, device, workers):
        yield ([g[0] for g in group], *_tensors(group, device))


def attribute_batches(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str, attributes,
                      workers: Optional[int] = None) -> Iterator:
    """As `masked_batches`, plus `parts`: attribute -> (index (n,) of the batch's images that have
    it, their masks (n,1,H,W) float {0,1}), for the attributes of `attributes` (an attribute source)."""
    import torch
    for group in _decoded(pairs, batch_size, device, workers, attributes):
        x, m = _tensors(group, device)
        parts: Dict[str, Tuple[object, object]] = {}
        for name in attributes.names:
            have = [k for k, g in enumerate(group) if name in g[3]]
            if have:
                masks = np.stack([group[k][3][name] for k in have])
                parts[name] = (torch.as_tensor(have, device=device),
                               torch.from_numpy(masks).to(device).float().unsqueeze(1))
        yield [g[0] for g in group], x, m, parts


def _same_shape(decoded: List[tuple]):
    start = 0
    for i in range(1, len(decoded) + 1):
        if i == len(decoded) or decoded[i][1].shape != decoded[start][1].shape:
            yield decoded[start:i]
            start = i
