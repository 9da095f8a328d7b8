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
                 checker: Optional[Callable[[object, np.ndarray], None]] = None) -> Iterator[List[HostBatch]]:
    """For each chunk of `batch_size` positions, its runs of equal-shape images as (positions,
    NHWC uint8), assembled `workers` chunks ahead in threads.

    `render(item)` replaces the pixels (variants computed on the fly: never cached, they depend on
    more than one file); `checker(item, image)` sees every image (the masks' sizes of originals)."""
    chunks = [list(positions[i:i + batch_size]) for i in range(0, len(positions), batch_size)]

    def assemble(chunk: List[int]) -> List[HostBatch]:
        if render is None and pixels.mapped:
            if checker is not None:
                for k in chunk:
                    checker(pixels.items[k], _Shaped(pixels.shape(k)))
            return [(run, pixels.batch(run)) for run in _runs_by_shape(chunk, pixels.shape)]
        arrays = []
        for k in chunk:
            arr = render(pixels.items[k]) if render is not None else pixels.image(k)
            if checker is not None:
                checker(pixels.items[k], arr)
            arrays.append(arr)
        out, start = [], 0
        for i in range(1, len(arrays) + 1):
            if i == len(arrays) or arrays[i].shape != arrays[start].shape:
                out.append((chunk[start:i], np.stack(arrays[start:i])))
                start = i
        return out

    with closing(prefetched(chunks, assemble, workers)) as assembled:
        yield from assembled


class _Shaped:
    """An image's shape without its pixels, for checkers that read only `.shape` (mask sizes)."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def _runs_by_shape(chunk: List[int], shape_of: Callable[[int], tuple]) -> List[List[int]]:
    runs, start = [], 0
    for i in range(1, len(chunk) + 1):
        if i == len(chunk) or shape_of(chunk[i]) != shape_of(chunk[start]):
            runs.append(chunk[start:i])
            start = i
    return runs


class DeviceFeed:
    """Moves NHWC uint8 host batches to `device` as NCHW float [0,1] (channels-last strides).

    On CUDA each batch is copied into one of a few reused pinned buffers and sent on a side stream
    one batch ahead; the compute stream waits on that copy's event only, so the host never waits
    for the device here. On other devices the batch is wrapped without a copy."""

    def __init__(self, device: str | torch.device, depth: int = 3):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.depth = depth
        self._pinned: List[Optional[torch.Tensor]] = [None] * depth
        self._events: List[Optional[object]] = [None] * depth
        self._stream = torch.cuda.Stream(device=self.device) if self.cuda else None

    def _pin(self, slot: int, batch: np.ndarray) -> torch.Tensor:
        """`batch` copied into pinned slot `slot` (grown as needed), once its last copy is done."""
        if self._events[slot] is not None:
            self._events[slot].synchronize()  # the copy `depth` batches ago: long finished
        buf = self._pinned[slot]
        if buf is None or buf.numel() < batch.size:
            buf = torch.empty(batch.size, dtype=torch.uint8, pin_memory=True)
            self._pinned[slot] = buf
        view = buf[:batch.size].view(batch.shape)
        view.numpy()[...] = batch
        return view

    def _send(self, slot: int, batch: np.ndarray) -> Tuple[torch.Tensor, object]:
        host = self._pin(slot, batch)
        with torch.cuda.stream(self._stream):
            x = to_unit(host.to(self.device, non_blocking=True).permute(0, 3, 1, 2))
            done = torch.cuda.Event()
            done.record(self._stream)
        self._events[slot] = done
        return x, done

    def __call__(self, batches: Iterator[Tuple[object, np.ndarray]]) -> Iterator[Tuple[object, torch.Tensor]]:
        """(tag, NHWC uint8) in, (tag, NCHW float on the device) out, in order."""
        if not self.cuda:
            for tag, batch in batches:
                yield tag, to_tensor(batch, self.device)
            return
        current = torch.cuda.current_stream(self.device)
        ahead = None
        slot = 0
        for tag, batch in batches:
            sent = (tag, *self._send(slot, batch))
            slot = (slot + 1) % self.depth
            if ahead is not None:
                yield self._ready(ahead, current)
            ahead = sent
        if ahead is not None:
            yield self._ready(ahead, current)

    @staticmethod
    def _ready(sent, current) -> Tuple[object, torch.Tensor]:
        tag, x, done = sent
        current.wait_event(done)
        x.record_stream(current)  # its memory is the compute stream's to free
        return tag, x


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
        _DIVISORS[device] = torch.tensor(255.0, dtype=torch.float32, device=device)
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
