"""Batches of (items, images, masks) on a device, for the probes.

Images come from the pixel cache (`data.pixel_cache`: decoded once, then mapped), masks from their
files; both are assembled in threads ahead of the probe, and on a GPU stacked into pinned memory
there so that the copy to the device does not wait on the host."""
from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..data.images import object_mask
from ..data.pixel_cache import MaskFile, Pixels, pixels_of
from ..errors import DataError
from ..data.prefetch import prefetched, resolve_workers


def _decode(pixels: Pixels, masks: Optional[Pixels], chunk, attributes=None):
    out = []
    for k, (item, mask_ref) in chunk:
        img = pixels.image(k)
        parts = attributes.masks(item, img.shape[:2]) if attributes is not None else {}
        if masks is None:
            mask = object_mask(mask_ref, item.path, img.shape[:2])
        else:
            mask = masks.image(k)[..., 0].view(np.bool_)
            if mask.shape != img.shape[:2]:
                raise DataError(f"mask {mask_ref} is {mask.shape[1]}x{mask.shape[0]} but image {item.path} is "
                                f"{img.shape[1]}x{img.shape[0]}")
        out.append((item, img, mask, parts))
    return out


def _decoded(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str, workers: Optional[int] = None,
             attributes=None) -> Iterator[Tuple[List[tuple], tuple]]:
    """(group, host arrays) of equal-size images, `batch_size` pairs a chunk, the next chunks
    assembled while the caller works."""
    pixels = pixels_of([item for item, _ in pairs])
    files = all(isinstance(ref, (str, Path)) for _, ref in pairs)  # RIVAL10's masks are readers, not files
    masks = pixels_of([MaskFile(Path(ref)) for _, ref in pairs]) if files and pairs else None
    numbered = list(enumerate(pairs))
    chunks = [[(k, pair) for k, pair in numbered[i:i + batch_size]] for i in range(0, len(pairs), batch_size)]
    pin = str(device).startswith("cuda")

    def assemble(chunk):
        if attributes is None and masks is not None and pixels.mapped and masks.mapped:
            return _sliced(pixels, masks, chunk, pin)
        return [(group, _host(group, pin)) for group in _same_shape(_decode(pixels, masks, chunk, attributes))]

    with closing(prefetched(chunks, assemble, resolve_workers(workers, device))) as decoded:
        for chunk in decoded:
            yield from chunk


def _sliced(pixels: Pixels, masks: Pixels, chunk, pin: bool):
    """The fast path, both maps whole: each run of equal-size images is one slice of each map
    (copied once, into pinned memory on a GPU), no per-image arrays."""
    import warnings

    import torch

    from ..evaluation.feed import _runs_by_shape
    out = []
    by_k = dict(chunk)
    for run in _runs_by_shape([k for k, _ in chunk], pixels.shape):
        h, w = pixels.shape(run[0])[:2]
        for k in run:
            mh, mw = masks.shape(k)[:2]
            if (mh, mw) != (h, w):
                raise DataError(f"mask {by_k[k][1]} is {mw}x{mh} but image {by_k[k][0].path} is {w}x{h}")
        with warnings.catch_warnings():  # read-only maps: only read (copied below or by the conversion)
            warnings.simplefilter("ignore", UserWarning)
            x = torch.from_numpy(pixels.batch(run))
            m = torch.from_numpy(masks.batch(run)[..., 0].view(np.bool_))
        host = (x.pin_memory(), m.pin_memory()) if pin else (x, m)
        out.append(([(by_k[k][0],) for k in run], host))
    return out


def _host(group, pin: bool):
    """The group's images (N,H,W,3) uint8 and masks (N,H,W) bool as CPU tensors, pinned for a GPU."""
    import torch
    x = torch.from_numpy(np.stack([g[1] for g in group]))
    m = torch.from_numpy(np.stack([g[2] for g in group]))
    return (x.pin_memory(), m.pin_memory()) if pin else (x, m)


def _tensors(host, device: str):
    from ..evaluation.feed import to_unit
    x, m = host
    x = to_unit(x.to(device, non_blocking=True).permute(0, 3, 1, 2))
    m = m.to(device, non_blocking=True).float().unsqueeze(1)
    return x, m


def masked_batches(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str,
                   workers: Optional[int] = None) -> Iterator:
    """Yield (items, x (N,3,H,W) float [0,1], m (N,1,H,W) float {0,1}) of equal-size images;
    `workers` threads decode ahead (default: `data.prefetch.default_workers(device)`)."""
    for group, host in _decoded(pairs, batch_size, device, workers):
        yield ([g[0] for g in group], *_tensors(host, device))


def attribute_batches(pairs: Sequence[Tuple[object, object]], batch_size: int, device: str, attributes,
                      workers: Optional[int] = None) -> Iterator:
    """As `masked_batches`, plus `parts`: attribute -> (index (n,) of the batch's images that have
    it, their masks (n,1,H,W) float {0,1}, the same positions as a list on the host, so that no
    one reads them back from the device), for the attributes of `attributes` (an attribute source)."""
    import torch

    from ..evaluation.transfer import to_device
    for group, host in _decoded(pairs, batch_size, device, workers, attributes):
        x, m = _tensors(host, device)
        parts: Dict[str, Tuple[object, object, List[int]]] = {}
        for name in attributes.names:
            have = [k for k, g in enumerate(group) if name in g[3]]
            if have:
                masks = np.stack([group[k][3][name] for k in have])
                parts[name] = (to_device(torch.as_tensor(have), device),
                               to_device(torch.from_numpy(masks), device).float().unsqueeze(1), have)
        yield [g[0] for g in group], x, m, parts


def _same_shape(decoded: List[tuple]):
    start = 0
    for i in range(1, len(decoded) + 1):
        if i == len(decoded) or decoded[i][1].shape != decoded[start][1].shape:
            yield decoded[start:i]
            start = i
