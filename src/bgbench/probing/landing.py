"""Turning a probe's launched batches into rows, in batch order, without holding up the next launch.

`ModelMeasure.measure` queues a batch's device work (`launch`) and then makes rows of an earlier
batch (`landed`). On the CPU there is nothing to overlap: the rows of a batch are made in the
caller once the next one is launched, as one thread does everything anyway. On a GPU the host's
share of a probe (Grad-CAM's post-processing and RIVAL10's eight measures in NumPy, a feature
ranking's arrays) can exceed the card's time for a batch; `workers` threads then make rows while
the caller launches the next batches. NumPy's sorts, reductions and OpenCV's resize release the
interpreter's lock, so the threads work in parallel; rows still come out in batch order, and at
most `workers` batches wait to be landed (each holds its images and results on the device).
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Deque, Iterator, Optional, Tuple


class Landing:
    """Batches launched and not yet made into rows. `push(batch, land)` takes a batch and the
    function that makes its rows, and yields (batch, rows) of those now due, in order; `drain()`
    yields the rest. With `workers` 0 the function runs in the caller, one batch behind."""

    def __init__(self, workers: int = 0):
        self.workers = max(0, int(workers))
        self._pool: Optional[ThreadPoolExecutor] = (
            ThreadPoolExecutor(self.workers, thread_name_prefix="bgbench-land") if self.workers else None)
        self._pending: Deque[Tuple[Any, Any]] = deque()

    def push(self, batch, land: Callable[[], list]) -> Iterator[Tuple[Any, list]]:
        if self._pool is None:
            yield from self._due(keep=0)  # the batch before this one, now that this one is queued
            self._pending.append((batch, land))
            return
        self._pending.append((batch, self._pool.submit(land)))
        yield from self._due(keep=self.workers)

    def drain(self) -> Iterator[Tuple[Any, list]]:
        yield from self._due(keep=0)

    def _due(self, keep: int) -> Iterator[Tuple[Any, list]]:
        while len(self._pending) > keep:
            batch, work = self._pending.popleft()
            yield batch, (work.result() if isinstance(work, Future) else work())

    def close(self) -> None:
        """Stop the threads (after an error: batches not landed are dropped)."""
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "Landing":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
