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
from ..data.pixel_cache import AttributeMasks, MaskFile, Pixels, pixels_of
from ..errors import DataError
from ..data.prefetch import prefetched, resolve_workers


def _decode(pixels: Pixels, masks: Optional[Pixels], chunk, attributes=None, planes: Optional[Pixels] = None):
    out = []
    for k, (item, mask_ref) in chunk:
        img = pixels.image(k)
        if planes is not None:
            parts = _unpacked(planes.image(k), attributes.names)
        else:
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
    assembled while the caller works. With `attributes`, their masks come from the pixel cache
    too (bit planes, `pixel_cache.AttributeMasks`) when the images do: the host arrays then end
    with the batch's planes and which images have which attribute, and each group's parts are left
    to `attribute_batches`."""
    pixels = pixels_of([item for item, _ in pairs])
    files = all(isinstance(ref, (str, Path)) for _, ref in pairs)  # RIVAL10's masks are readers, not files
    masks = pixels_of([MaskFile(Path(ref)) for _, ref in pairs]) if files and pairs else None
    planes = None
    if attributes is not None and attributes.names and pixels.mapped:
        planes = pixels_of([AttributeMasks(attributes, item, pixels.shape(k)[:2]) for k, (item, _) in enumerate(pairs)])
        planes = planes if planes.mapped else None
    numbered = list(enumerate(pairs))
    chunks = [[(k, pair) for k, pair in numbered[i:i + batch_size]] for i in range(0, len(pairs), batch_size)]
    pin = str(device).startswith("cuda")
    sliced = (attributes is None or planes is not None or not attributes.names) and masks is not None

    def assemble(chunk):
        if sliced and pixels.mapped and masks.mapped:
            return _sliced(pixels, masks, chunk, pin, planes, attributes.names if planes is not None else ())
        return [(group, _host(group, pin)) for group in _same_shape(_decode(pixels, masks, chunk, attributes,
                                                                            planes))]

    with closing(prefetched(chunks, assemble, resolve_workers(workers, device))) as decoded:
        for chunk in decoded:
            yield from chunk


def _sliced(pixels: Pixels, masks: Pixels, chunk, pin: bool, planes: Optional[Pixels] = None,
            names: Sequence[str] = ()):
    """The fast path, both maps whole: each run of equal-size images is one slice of each map
    (copied once, into pinned memory on a GPU), no per-image arrays; with `planes`, the run's
    attribute planes too, and which images have which of `names`."""
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
            p = torch.from_numpy(planes.batch(run)) if planes is not None else None
        host = (x, m) if p is None else (x, m, p)
        host = tuple(t.pin_memory() for t in host) if pin else host
        if p is not None:  # which images have which attribute, read here in the decoding thread
            from ..data.attributes import present_attributes
            host += (present_attributes(host[2].numpy(), len(names)),)
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
        x, m = _tensors(host[:2], device)
        if len(host) == 4:  # the batch's attribute planes, from the cache, and which images have which
            yield [g[0] for g in group], x, m, _planes_parts(host[2], host[3], attributes.names, device)
            continue
        parts: Dict[str, Tuple[object, object, List[int]]] = {}
        for name in attributes.names:  # (none: a source without attributes, its batches sliced)
            have = [k for k, g in enumerate(group) if name in g[3]]
            if have:
                masks = np.stack([group[k][3][name] for k in have])
                parts[name] = (to_device(torch.as_tensor(have), device),
                               to_device(torch.from_numpy(masks), device).float().unsqueeze(1), have)
        yield [g[0] for g in group], x, m, parts


def _planes_parts(planes, present: np.ndarray, names: Sequence[str],
                  device: str) -> Dict[str, Tuple[object, object, List[int]]]:
    """`attribute_batches`' parts from a batch's planes ((N, H, W, P) uint8 CPU tensor, pinned on
    a GPU) and which images have which attribute ((N, A) bool, read on the host from the planes):
    the planes go up once, and each attribute's masks are cut from them on the device."""
    import torch

    from ..evaluation.transfer import to_device
    up = to_device(planes, device)
    parts: Dict[str, Tuple[object, object, List[int]]] = {}
    for a, name in enumerate(names):
        have = np.flatnonzero(present[:, a]).tolist()
        if have:
            index = to_device(torch.as_tensor(have), device)
            bits = up[index, :, :, a >> 3].bitwise_right_shift(a & 7).bitwise_and_(1)
            parts[name] = (index, bits.float().unsqueeze(1), have)
    return parts


def _unpacked(planes: np.ndarray, names: Sequence[str]) -> Dict[str, np.ndarray]:
    """An image's attributes from its planes (H, W, P), as an attribute source's `masks` gives them:
    name -> H x W bool, for the attributes it has."""
    from ..data.attributes import present_attributes, unpacked_mask
    present = present_attributes(planes[None], len(names))[0]
    return {name: unpacked_mask(planes, a) for a, name in enumerate(names) if present[a]}


def _same_shape(decoded: List[tuple]):
    start = 0
    for i in range(1, len(decoded) + 1):
        if i == len(decoded) or decoded[i][1].shape != decoded[start][1].shape:
            yield decoded[start:i]
            start = i
