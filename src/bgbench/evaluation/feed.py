"""The feed: every pass of a model over images reads them through here.

One iterator, `batches`, serves eval, the shortcut arms, the probes (with object and attribute
masks), DFR's and the linear probe's features, `bgbench predict`, the adversarial edit and the
pictures of the galleries. It owns, in order:

- reading: the decoded-pixel cache's map of the images (`data.pixel_cache`: decoded once, in its
  own first pass) or, where there is none (cache off, images made on the fly), decoding;
- batching: `batch_size` consecutive images a batch, cut where the image size changes;
- torch.utils.data: a `Dataset` whose item k is batch k, read by a `DataLoader` (worker processes
  that decode ahead, `prefetch_factor` batches each, into pinned memory on a GPU), as timm's and
  torchvision's reference scripts feed a model;
- the copy to the device as uint8 (`DeviceFeed`, a quarter of float's bytes), converted to [0,1]
  float there; normalization stays inside the model wrapper (`models.inputs`), so composites and
  probes keep working on [0,1] images;
- torchrun: block b of `batch_size` images goes to rank b mod K (`distributed.share`), so every
  forward sees exactly what it sees in one process, and `gathered` puts every rank's rows back in
  one-process order on rank 0;
- the progress bar.

Precision and the autograd context are the caller's (`numerics.forward_context`), set once around
its loop, because a measure's own work between forwards (Grad-CAM's backward) runs under them too.
"""
from __future__ import annotations

import functools
import time
import warnings
from itertools import groupby
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ..console import progress as progress_bar
from ..data.attributes import packed_masks, present_attributes
from ..data.images import check_mask_fits, object_mask
from ..data.pixel_cache import AttributeMasks, MaskFile, Pixels, pixels_of
from ..distributed import gather_in_order, share
from ..errors import BgbenchError


class Batch(NamedTuple):
    """One batch on the device: the dataset items, images (N,3,H,W) float [0,1], object masks
    (N,1,H,W) float {0,1} (None where the pass reads none), and each attribute's (index (n,) of the
    images that have it, their masks (n,1,H,W), the same positions as a host list) in `parts`."""

    items: list
    x: Any
    m: Any = None
    parts: Dict[str, tuple] = {}


class _Host(NamedTuple):
    """One run of equal-size images of a batch, on the host: positions into the pixels, NHWC uint8
    images, NHW bool masks, the attribute planes (N,H,W,P) uint8 and which images have which
    attribute (N,A)."""

    positions: List[int]
    x: torch.Tensor
    m: Optional[torch.Tensor] = None
    planes: Optional[torch.Tensor] = None
    present: Optional[np.ndarray] = None


class _Failed(NamedTuple):
    """An error raised reading a batch in a worker process, handed back whole: the DataLoader would
    wrap it in a traceback of the worker, and a user's bad file is one line."""

    error: BaseException


class Images(Dataset):
    """Item k: the runs of equal-size images of batch k (`chunks[k]`, positions into `pixels`).

    `masks`: the object masks by position (a `Pixels` of `pixel_cache.MaskFile`s, or a list of
    references a reader resolves, RIVAL10's); `attributes`: an attribute source, its masks read
    from `planes` (the cache's bit planes) where given; `render(item)` replaces the pixels (images
    made on the fly: never cached, they depend on more than one file); `checker(item, image)` sees
    every image (the masks' sizes of originals: an image of the map is seen by its shape)."""

    def __init__(self, pixels: Pixels, chunks: Sequence[List[int]], *, masks=None, attributes=None,
                 planes: Optional[Pixels] = None, render: Optional[Callable] = None,
                 checker: Optional[Callable] = None):
        self.pixels, self.chunks = pixels, [list(c) for c in chunks]
        self.masks, self.attributes, self.planes = masks, attributes, planes
        self.render, self.checker = render, checker

    @classmethod
    def of(cls, pixels: Pixels, batch_size: int, **reading) -> "Images":
        """Every image of `pixels`, `batch_size` consecutive ones a batch."""
        return cls(pixels, chunks_of(len(pixels), batch_size), **reading)

    @classmethod
    def of_pairs(cls, pairs: Sequence[Tuple[Any, Any]], batch_size: int, attributes=None,
                 positions: Optional[Sequence[int]] = None) -> "Images":
        """A probe's (item, object mask) `pairs` (those at `positions` only, where given: the entries
        stay the whole list's), with each attribute's masks where `attributes` is a source: images,
        masks and attribute bit planes each read from its entry of the pixel cache (a mask that is
        a reader, RIVAL10's, is read by it)."""
        pixels = pixels_of([item for item, _ in pairs])
        masks = [ref for _, ref in pairs]
        if pairs and all(isinstance(ref, (str, Path)) for ref in masks):
            masks = pixels_of([MaskFile(Path(ref)) for ref in masks])
        planes = None
        if attributes is not None and attributes.names and pixels.mapped:
            planes = pixels_of([AttributeMasks(attributes, item, pixels.shape(k)[:2])
                                for k, (item, _) in enumerate(pairs)])
            planes = planes if planes.mapped else None
        chosen = list(range(len(pairs))) if positions is None else list(positions)
        chunks = [chosen[i:i + batch_size] for i in range(0, len(chosen), batch_size)]
        return cls(pixels, chunks, masks=masks, attributes=attributes, planes=planes)

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, k: int):
        try:
            return self._runs(self.chunks[k])
        except Exception as e:  # noqa: BLE001 (handed to the loop, which raises it as it is)
            return _Failed(e)

    def _runs(self, chunk: List[int]) -> List[_Host]:
        """The batch `chunk` as runs of consecutive positions whose images have one shape: the
        images, masks and attribute planes a map holds read as one slice of it each (no per-image
        arrays), the others an image at a time."""
        pixels = self.pixels
        images = None if self.render is None and pixels.mapped else {k: self._image(k) for k in chunk}
        shape = pixels.shape if images is None else (lambda k: images[k].shape)
        return [self._run(list(run), images, tuple(hw[:2])) for hw, run in groupby(chunk, key=shape)]

    def _image(self, k: int) -> np.ndarray:
        item = self.pixels.items[k]
        image = self.render(item) if self.render is not None else self.pixels.image(k)
        if self.checker is not None:
            self.checker(item, image)
        return image

    def _run(self, run: List[int], images: Optional[Dict[int, np.ndarray]], hw: Tuple[int, int]) -> _Host:
        """One run of images of size `hw`; `images` the images decoded or made (None: the map's)."""
        pixels = self.pixels
        if images is None:
            if self.checker is not None:
                for k in run:
                    self.checker(pixels.items[k], SimpleNamespace(shape=pixels.shape(k)))  # its shape, no pixels
            x = _tensor(pixels.batch(run))
        else:
            x = torch.from_numpy(np.stack([images[k] for k in run]))
        if self.masks is None:
            return _Host(run, x)
        m = _tensor(self._masks(run, hw))
        attributes = self.attributes
        if attributes is None or not attributes.names:
            return _Host(run, x, m)
        if self.planes is not None:
            planes = self.planes.batch(run)
        else:  # packed here as the cache keeps them
            planes = np.stack([packed_masks(attributes.masks(pixels.items[k], hw), attributes.names, hw) for k in run])
        return _Host(run, x, m, _tensor(planes), present_attributes(planes, len(attributes.names)))

    def _masks(self, run: List[int], hw: Tuple[int, int]) -> np.ndarray:
        """The run's object masks (N,H,W) bool, each checked against its image's size."""
        masks, items = self.masks, self.pixels.items
        if isinstance(masks, Pixels) and masks.mapped:
            for k in run:
                check_mask_fits(masks.items[k].path, items[k].path, hw, masks.shape(k))
            return masks.batch(run)[..., 0].view(np.bool_)
        out = []
        for k in run:
            if isinstance(masks, Pixels):
                mask = masks.image(k)[..., 0].view(np.bool_)
                check_mask_fits(masks.items[k].path, items[k].path, hw, mask.shape)
            else:
                mask = object_mask(masks[k], items[k].path, hw)
            out.append(mask)
        return np.stack(out)


def _tensor(a: np.ndarray) -> torch.Tensor:
    """A read-only slice of a map as a tensor: only read (copied to the device, or pinned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(a)


def chunks_of(n: int, batch_size: int) -> List[List[int]]:
    """Positions 0..n-1 in batches of `batch_size`, in order."""
    return [list(range(i, min(n, i + batch_size))) for i in range(0, n, batch_size)]


def loader(images: Images, order: Sequence[int], workers: int, device) -> DataLoader:
    """A DataLoader over the batches `order` of `images`: worker processes decode ahead where there
    is decoding to do; a map already written is sliced in this process (a worker would only add a
    copy through shared memory), and so is one still being written by the cache's first pass,
    whose progress only this process sees."""
    decodes = images.render is not None or not images.pixels.mapped
    workers = workers if decodes and len(order) > 1 else 0
    return DataLoader(images, batch_size=None, sampler=list(order), num_workers=workers,
                      prefetch_factor=2 if workers else None, pin_memory=torch.device(device).type == "cuda",
                      collate_fn=lambda runs: runs, multiprocessing_context="fork" if workers else None)


def host_runs(images: Images, order: Sequence[int], workers: int = 1, device="cpu",
              skip: Optional[Callable[[list, BaseException], None]] = None) -> Iterator[Tuple[int, _Host]]:
    """(batch index, run) of the batches `order` of `images`, in order, read ahead (`loader`). A
    batch that cannot be read raises its error, or, with `skip`, is left out after
    `skip(its items, the error)` for a user's error (a `BgbenchError`: a corrupt file)."""
    for k, runs in zip(order, loader(images, order, workers, device)):
        if isinstance(runs, _Failed):
            if skip is None or not isinstance(runs.error, BgbenchError):
                raise runs.error
            skip([images.pixels.items[p] for p in images.chunks[k]], runs.error)
            continue
        for run in runs:
            yield k, run


def batches(images: Images, *, device, workers: int = 1, ranks=None, progress: bool = False,
            desc: str = "images", unit: str = "img", skip=None) -> Iterator[Tuple[int, Batch]]:
    """(batch index, `Batch` on `device`) of every batch of `images` (two `Batch`es of one index
    where the image size changes within it), this rank's batches only under torchrun (`ranks`);
    `skip`: see `host_runs`; see the module docstring."""
    chunks = images.chunks
    order = share(len(chunks), ranks) if ranks is not None else range(len(chunks))
    bar = progress_bar(enabled=progress, total=sum(len(chunks[k]) for k in order), desc=desc, unit=unit)
    try:
        for (k, host), x in DeviceFeed(device)(((k, host), host.x) for k, host in host_runs(images, order, workers,
                                                                                            device, skip)):
            items = [images.pixels.items[p] for p in host.positions]
            yield k, Batch(items, x, *_masks_on(host, images.attributes, device))
            bar.update(len(items))
    finally:
        bar.close()


def masked_batches(pairs: Sequence[Tuple[Any, Any]], *, batch_size: int, device, workers: int = 1, ranks=None,
                   attributes=None, progress: bool = False, desc: str = "images") -> Iterator[Tuple[int, Batch]]:
    """`batches` of a probe's (item, object mask) `pairs` (`Images.of_pairs`)."""
    yield from batches(Images.of_pairs(pairs, batch_size, attributes), device=device, workers=workers,
                       ranks=ranks, progress=progress, desc=desc)


def _masks_on(host: _Host, attributes, device) -> Tuple[Any, Dict[str, tuple]]:
    """The run's object masks (N,1,H,W) float {0,1} and attribute parts on `device`: the planes go
    up once, and each attribute's masks are cut from them on the device."""
    if host.m is None:
        return None, {}
    m = to_device(host.m, device).float().unsqueeze(1)
    parts: Dict[str, tuple] = {}
    if attributes is None or host.planes is None:
        return m, parts
    up = to_device(host.planes, device)
    for a, name in enumerate(attributes.names):
        have = np.flatnonzero(host.present[:, a]).tolist()
        if have:
            index = to_device(torch.as_tensor(have), device)
            bits = up[index, :, :, a >> 3].bitwise_right_shift(a & 7).bitwise_and_(1)
            parts[name] = (index, bits.float().unsqueeze(1), have)
    return m, parts


def gathered(rows: Dict[int, list], n_batches: int, ranks) -> Optional[list]:
    """Every rank's rows (`rows[k]`: those of batch k, this rank's batches) in the order one process
    makes them, on rank 0; None on the other ranks."""
    mine = [rows.get(k, []) for k in share(n_batches, ranks)]
    blocks = gather_in_order(mine, n_batches, ranks)
    return None if blocks is None else [row for block in blocks for row in block]


class DeviceFeed:
    """Moves NHWC uint8 host batches to `device` as NCHW float [0,1] (channels-last strides).

    On CUDA, `depth` slots each hold a pinned host buffer and a uint8 device buffer, reused for the
    whole pass: a batch is copied into its slot's pinned buffer, sent to its device buffer on a side
    stream one batch ahead, and converted to float on the compute stream, which waits for that copy
    only. A slot is written again once the device is done with it (an event the side stream waits
    for on the device; the host waits only for the copy `depth` batches back), so nothing is
    allocated per batch and the host never waits for the forward. On other devices the batch is
    wrapped without a copy.

    `host_seconds` and `wait_seconds` are what the host spent copying into pinned memory and
    waiting for a slot: the feed's own cost, which `benchmarks/eval_throughput.py` prints."""

    def __init__(self, device: str | torch.device, depth: int = 3):
        self.device = torch.device(device)
        self.depth = depth
        self.host_seconds = self.wait_seconds = 0.0

    def __call__(self, batches: Iterator[Tuple[object, torch.Tensor]]) -> Iterator[Tuple[object, torch.Tensor]]:
        """(tag, NHWC uint8 tensor) in, (tag, NCHW float on the device) out, in order."""
        if self.device.type != "cuda":
            for tag, batch in batches:
                yield tag, to_tensor(batch, self.device)
            return
        yield from _CudaRing(self, _side_stream(self.device)).run(batches)


class _CudaRing:
    """The slots of one pass of a `DeviceFeed` on CUDA (see there)."""

    def __init__(self, feed: DeviceFeed, side):
        self.feed, self.side = feed, side
        self.compute = torch.cuda.current_stream(feed.device)
        n = feed.depth
        self.host: List[Optional[torch.Tensor]] = [None] * n
        self.dev: List[Optional[torch.Tensor]] = [None] * n
        self.copied: List[Optional[object]] = [None] * n  # side stream: the slot's last copy is done
        self.used: List[Optional[object]] = [None] * n  # compute stream: the slot's last batch is converted

    def run(self, batches) -> Iterator[Tuple[object, torch.Tensor]]:
        ahead = None
        for k, (tag, batch) in enumerate(batches):
            sent = self.send(k % self.feed.depth, tag, batch)
            if ahead is not None:
                yield self.convert(*ahead)
            ahead = sent
        if ahead is not None:
            yield self.convert(*ahead)

    def send(self, slot: int, tag, batch: torch.Tensor):
        t0 = time.perf_counter()
        if self.copied[slot] is not None:
            self.copied[slot].synchronize()  # the copy `depth` batches back, out of this slot's host memory
        t1 = time.perf_counter()
        n = batch.numel()
        if self.dev[slot] is None or self.dev[slot].numel() < n:
            with torch.cuda.stream(self.side):
                # allocated on the side stream, which writes it: memory the caching allocator hands
                # out is safe for the stream it is allocated on only (allocated on the compute stream,
                # the copy could land in activations a queued forward still uses: NaNs in the
                # H100 run's bf16 eval); the compute stream's reads are recorded for its release
                self.dev[slot] = torch.empty(n, dtype=torch.uint8, device=self.feed.device)
                self.dev[slot].record_stream(self.compute)
        if batch.is_pinned():  # the DataLoader pinned it: copied from where it lies, kept until sent
            host = self.host[slot] = batch.reshape(-1)
        else:
            host = self.host[slot]
            if host is None or host.numel() < n:
                host = self.host[slot] = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            host = host[:n]
            host.copy_(batch.reshape(-1))
        with torch.cuda.stream(self.side):
            if self.used[slot] is not None:
                self.side.wait_event(self.used[slot])  # on the device: the slot's last batch is converted
            self.dev[slot][:n].copy_(host, non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.side)
        self.copied[slot] = done
        self.feed.wait_seconds += t1 - t0
        self.feed.host_seconds += time.perf_counter() - t1
        return tag, slot, tuple(batch.shape), done

    def convert(self, tag, slot: int, shape, copied) -> Tuple[object, torch.Tensor]:
        self.compute.wait_event(copied)
        n = int(np.prod(shape))
        x = to_unit(self.dev[slot][:n].view(shape).permute(0, 3, 1, 2))
        used = torch.cuda.Event()
        used.record(self.compute)
        self.used[slot] = used
        return tag, x


@functools.lru_cache(maxsize=None)
def _side_stream(device: torch.device):
    """One copy stream per device for the process: streams are not free to make, and the caching
    allocator keeps its memory per stream."""
    return torch.cuda.Stream(device=device)


def to_unit(x: torch.Tensor) -> torch.Tensor:
    """uint8 -> float in [0,1] as x / 255 in IEEE division, bit for bit the same on every device.

    On CUDA, PyTorch divides by a Python number by multiplying with its reciprocal, which rounds
    126 of the 256 values differently from the CPU's division; dividing by a 0-dim tensor on the
    device runs the true division there."""
    out = x.float()
    return out.div_(255 if out.device.type == "cpu" else _divisor(out.device))


@functools.lru_cache(maxsize=None)
def _divisor(device: torch.device) -> torch.Tensor:
    return torch.full((), 255.0, dtype=torch.float32, device=device)  # a fill: no host copy


def to_tensor(batch, device: str | torch.device = "cpu") -> torch.Tensor:
    """NHWC uint8 (an array or a tensor) -> NCHW float in [0,1] on `device` (channels_last memory,
    no copy of the layout).

    The uint8 batch moves before it becomes float: a quarter of the bytes cross to a GPU, and the
    conversion runs there (`to_unit`: the same numbers on either device). A read-only batch (a
    slice of the pixel cache's map) is only read: `.float()` makes the new tensor."""
    x = batch if isinstance(batch, torch.Tensor) else _tensor(batch)
    return to_unit(x.to(device, non_blocking=True).permute(0, 3, 1, 2))


# -- copies between host and device ------------------------------------------------------------------
# Moving small tensors between host and device without waiting on the device: the challenge's
# indices and verdicts, the probes' labels and results.
#
# On CUDA a copy from ordinary (pageable) host memory to the device synchronises the stream first,
# and `.cpu()` of a device tensor waits for every queued kernel: each is a host sync, and the card
# idles while the host then packs its next batch. Here data goes up from pinned memory and results
# come down into pinned memory, both `non_blocking`; a `Fetch` is waited on (one event, not the
# whole device) only when the host needs its values. The probes' template (`ModelMeasure.measure`)
# queues the next batch before it reads a batch's `Readback`, so the card computes while the host
# makes rows. On the CPU both are the identity, so CPU runs do exactly what they did.

#: Device types whose copies to the host are queued, not waited for: CUDA's (an event says when
#: they have landed). `benchmarks/host_only.py` adds torch's shape-only `meta` device, whose
#: copies it stands in for, to time the host's work as a card would leave it.
QUEUED = {"cuda"}


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`t` on `device`: a CPU tensor goes to a card from pinned memory without blocking (a pageable
    source would synchronise the stream); anything else as `Tensor.to` moves it."""
    device = torch.device(device)
    if device.type not in QUEUED or t.device.type != "cpu":
        return t.to(device)
    return (t.pin_memory() if device.type == "cuda" else t).to(device, non_blocking=True)


class Fetch:
    """Device tensors on their way to the host, copied without blocking into pinned memory; `wait`
    blocks until they have arrived (on CUDA, one event recorded after the copies) and returns them.
    CPU tensors are held as they are."""

    def __init__(self, tensors: Sequence[torch.Tensor]):
        self.host: List[torch.Tensor] = []
        self.event = None
        for t in tensors:
            t = t.detach()
            if t.device.type in QUEUED:
                host = torch.empty_strided(t.shape, _host_strides(t), dtype=t.dtype, pin_memory=t.device.type == "cuda")
                host.copy_(t, non_blocking=True)
                self.host.append(host)
            else:
                self.host.append(t.cpu())  # the CPU: no copy; another device: a plain copy, which waits
        if any(t.device.type == "cuda" for t in tensors):
            self.event = torch.cuda.Event()
            self.event.record()

    def wait(self) -> List[torch.Tensor]:
        if self.event is not None:
            self.event.synchronize()
            self.event = None
        return self.host


def _host_strides(t: torch.Tensor):
    """The strides `t.cpu()` would give its copy: t's own where its elements fill their span
    without gaps or overlaps (a contiguous, channels-last or permuted tensor), else contiguous
    ones. The layout matters to what is computed from the copy: NumPy sums a float32 array in
    the order of its memory (Grad-CAM's maps, summed over channels on the host)."""
    span = 1
    for stride, size in sorted((st, n) for st, n in zip(t.stride(), t.shape) if n != 1):
        if stride != span:
            return torch.empty(t.shape, device="meta").stride()
        span *= size
    return t.stride()


class Readback:
    """A `Fetch` of named tensors whose `get()` gives numpy arrays by name (bfloat16 as float32,
    exactly: numpy has no bfloat16): a probe's batch results, read once the next batch is queued."""

    def __init__(self, **tensors: torch.Tensor):
        self.names = list(tensors)
        self.fetch = Fetch(tensors.values())

    def get(self) -> Dict[str, np.ndarray]:
        return {name: (t.float() if t.dtype == torch.bfloat16 else t).numpy()
                for name, t in zip(self.names, self.fetch.wait())}
