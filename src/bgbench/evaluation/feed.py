"""The feed: uint8 image batches from the host to the model's device, without keeping it waiting.

What a GPU needs (ResNet-50 at 224 px runs 7,000-23,000 img/s on one H100): batches assembled
ahead of the forward (threads, from the decoded-pixel cache's memory map or from decoding), copied
as uint8 (a quarter of float's bytes) from pinned memory on a side stream while the previous batch
computes, and converted to [0,1] float on the device. This is timm's `PrefetchLoader` pattern;
normalization itself stays inside the model wrapper (`models.norms`), so composites and probes
keep working on [0,1] images.

On a CPU the same iterator hands `torch.from_numpy` views over: no pinning, no stream.
"""
from __future__ import annotations

import time
import warnings
from contextlib import closing
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..data.pixel_cache import Pixels
from ..data.prefetch import prefetched

#: One host batch: the positions (into the Pixels) it holds, and their NHWC uint8 pixels.
HostBatch = Tuple[List[int], np.ndarray]


def host_batches(pixels: Pixels, positions: Sequence[int], batch_size: int, workers: int = 1,
                 render: Optional[Callable[[object], np.ndarray]] = None,
                 checker: Optional[Callable[[object, np.ndarray], None]] = None) -> Iterator[HostBatch]:
    """(positions, NHWC uint8) of each run of equal-shape images of each chunk of `batch_size`
    positions, in order, assembled `workers` chunks ahead in threads.

    `render(item)` replaces the pixels (variants computed on the fly: never cached, they depend on
    more than one file); `checker(item, image)` sees every image (the masks' sizes of originals)."""
    chunks = [list(positions[i:i + batch_size]) for i in range(0, len(positions), batch_size)]

    def assemble(chunk: List[int]) -> List[HostBatch]:
        if render is None and pixels.mapped:
            if checker is not None:
                for k in chunk:
                    checker(pixels.items[k], _Shaped(pixels.shape(k)))
            return [(run, pixels.batch(run)) for run in _runs_by_shape(chunk, pixels.shape)]
        arrays = {}
        for k in chunk:
            arrays[k] = render(pixels.items[k]) if render is not None else pixels.image(k)
            if checker is not None:
                checker(pixels.items[k], arrays[k])
        return [(run, np.stack([arrays[k] for k in run]))
                for run in _runs_by_shape(chunk, lambda k: arrays[k].shape)]

    with closing(prefetched(chunks, assemble, workers)) as assembled:
        for runs in assembled:
            yield from runs


class _Shaped:
    """An image's shape without its pixels, for checkers that read only `.shape` (mask sizes)."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def _runs_by_shape(chunk: List[int], shape_of: Callable[[int], tuple]) -> List[List[int]]:
    """`chunk` cut into runs of consecutive positions whose images have one shape."""
    runs, start = [], 0
    for i in range(1, len(chunk) + 1):
        if i == len(chunk) or shape_of(chunk[i]) != shape_of(chunk[start]):
            runs.append(chunk[start:i])
            start = i
    return runs


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
        self.cuda = self.device.type == "cuda"
        self.depth = depth
        self.host_seconds = self.wait_seconds = 0.0

    def __call__(self, batches: Iterator[Tuple[object, np.ndarray]]) -> Iterator[Tuple[object, torch.Tensor]]:
        """(tag, NHWC uint8) in, (tag, NCHW float on the device) out, in order."""
        if not self.cuda:
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

    def send(self, slot: int, tag, batch: np.ndarray):
        t0 = time.perf_counter()
        if self.copied[slot] is not None:
            self.copied[slot].synchronize()  # the copy `depth` batches back, out of this pinned buffer
        t1 = time.perf_counter()
        n = batch.size
        host = self.host[slot]
        if host is None or host.numel() < n:
            host = self.host[slot] = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            with torch.cuda.stream(self.side):
                # allocated on the side stream, which writes it: memory the caching allocator hands
                # out is safe for the stream it is allocated on only (allocated on the compute stream,
                # the copy could land in activations a queued forward still uses: NaNs in the
                # H100 run's bf16 eval); the compute stream's reads are recorded for its release
                self.dev[slot] = torch.empty(n, dtype=torch.uint8, device=self.feed.device)
                self.dev[slot].record_stream(self.compute)
        host = host[:n]
        host.numpy()[...] = batch.reshape(-1)
        with torch.cuda.stream(self.side):
            if self.used[slot] is not None:
                self.side.wait_event(self.used[slot])  # on the device: the slot's last batch is converted
            self.dev[slot][:n].copy_(host, non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.side)
        self.copied[slot] = done
        self.feed.wait_seconds += t1 - t0
        self.feed.host_seconds += time.perf_counter() - t1
        return tag, slot, batch.shape, done

    def convert(self, tag, slot: int, shape, copied) -> Tuple[object, torch.Tensor]:
        self.compute.wait_event(copied)
        n = int(np.prod(shape))
        x = to_unit(self.dev[slot][:n].view(shape).permute(0, 3, 1, 2))
        used = torch.cuda.Event()
        used.record(self.compute)
        self.used[slot] = used
        return tag, x


_SIDE_STREAMS: dict = {}


def _side_stream(device: torch.device):
    """One copy stream per device for the process: streams are not free to make, and the caching
    allocator keeps its memory per stream."""
    if device not in _SIDE_STREAMS:
        _SIDE_STREAMS[device] = torch.cuda.Stream(device=device)
    return _SIDE_STREAMS[device]


def to_unit(x: torch.Tensor) -> torch.Tensor:
    """uint8 -> float in [0,1] as x / 255 in IEEE division, bit for bit the same on every device.

    On CUDA, PyTorch divides by a Python number by multiplying with its reciprocal, which rounds
    126 of the 256 values differently from the CPU's division; dividing by a 0-dim tensor on the
    device runs the true division there."""
    out = x.float()
    if out.device.type == "cpu":
        return out.div_(255)
    return out.div_(_divisor(out.device))


_DIVISORS: dict = {}


def _divisor(device: torch.device) -> torch.Tensor:
    if device not in _DIVISORS:
        _DIVISORS[device] = torch.full((), 255.0, dtype=torch.float32, device=device)  # a fill: no host copy
    return _DIVISORS[device]


def to_tensor(batch: np.ndarray, device: str | torch.device = "cpu") -> torch.Tensor:
    """NHWC uint8 -> NCHW float in [0,1] on `device` (channels_last memory, no copy of the layout).

    The uint8 batch moves before it becomes float: a quarter of the bytes cross to a GPU, and the
    conversion runs there (`to_unit`: the same numbers on either device). A read-only batch (a
    slice of the pixel cache's map) is only read: `.float()` makes the new tensor."""
    with warnings.catch_warnings():  # a read-only map's slice: only read, `.float()` makes the new tensor
        warnings.simplefilter("ignore", UserWarning)
        x = torch.from_numpy(batch)
    return to_unit(x.to(device, non_blocking=True).permute(0, 3, 1, 2))
