"""Moving the challenge's small tensors between host and device without waiting on the device.

On CUDA a copy from ordinary (pageable) host memory to the device synchronises the stream first,
and `.cpu()` of a device tensor waits for every queued kernel: each is a host sync, and the card
idles while the host then packs its next batch. Here indices go up from pinned memory and results
come down into pinned memory, both `non_blocking`; a `Fetch` is waited on (one event, not the
whole device) only when the host needs its values. On the CPU both are the identity, so CPU runs
do exactly what they did.
"""
from __future__ import annotations

from typing import List, Sequence

import torch


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`t` on `device`: a CPU tensor goes to a card from pinned memory without blocking (a pageable
    source would synchronise the stream); anything else as `Tensor.to` moves it."""
    device = torch.device(device)
    if device.type != "cuda" or t.device.type != "cpu":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


class Fetch:
    """Device tensors on their way to the host, copied without blocking into pinned memory; `wait`
    blocks until they have arrived (on CUDA, one event recorded after the copies) and returns them.
    CPU tensors are held as they are."""

    def __init__(self, tensors: Sequence[torch.Tensor]):
        tensors = list(tensors)
        self.event = None
        if tensors and tensors[0].device.type == "cuda":
            self.host = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in tensors]
            for h, t in zip(self.host, tensors):
                h.copy_(t, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host = [t.cpu() for t in tensors]

    def ready(self) -> bool:
        """Whether `wait` would return at once (no sync: an event query)."""
        return self.event is None or self.event.query()

    def wait(self) -> List[torch.Tensor]:
        if self.event is not None:
            self.event.synchronize()
            self.event = None
        return self.host
