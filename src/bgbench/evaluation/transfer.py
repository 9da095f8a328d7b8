"""Moving small tensors between host and device without waiting on the device: the challenge's
indices and verdicts, the probes' labels and results.

On CUDA a copy from ordinary (pageable) host memory to the device synchronises the stream first,
and `.cpu()` of a device tensor waits for every queued kernel: each is a host sync, and the card
idles while the host then packs its next batch. Here data goes up from pinned memory and results
come down into pinned memory, both `non_blocking`; a `Fetch` is waited on (one event, not the
whole device) only when the host needs its values. The probes' template (`ModelMeasure.measure`)
queues the next batch before it reads a batch's `Readback`, so the card computes while the host
makes rows. On the CPU both are the identity, so CPU runs do exactly what they did.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np
import torch

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
