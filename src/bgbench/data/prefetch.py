"""Decoding ahead of the model: `workers` threads each decode a whole batch, and batches come out in order.

Why threads and not DataLoader worker processes: the work of a batch (PIL's JPEG and PNG decoders,
`np.load` of a mask, OpenCV, `np.stack`) runs in C with the GIL released, so threads decode in
parallel; and a thread shares the parent's memory, so there is no process start-up, no dataset
pickled into each worker, and no decoded batch copied back through shared memory. On a CPU one
thread keeps ahead of any real model (a 224-px JPEG decodes and converts in about 0.4 ms; a
ResNet-50 forward costs over 100 ms of CPU per image). On a GPU the forward is a hundred times
faster and it takes several threads: `benchmarks/README.md` records how many.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Deque, Iterator, Optional, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: What --workers says, in every command that feeds a model from image files.
WORKERS_HELP = ("threads that decode batches ahead of the model and, on a GPU, make a probe's rows while the next "
                "batches run (default: 1 on the CPU, where the forward is the bottleneck; on a GPU one per core, 2 to "
                "8, shared among the torchrun processes of a machine)")


def default_workers(device: str = "cpu") -> int:
    """Decoding threads for a model on `device`: 1 beside a CPU model (which already uses every core),
    else this process's share of the machine's cores (torchrun's processes split them), 2 to 8."""
    if not str(device).startswith("cuda"):
        return 1
    per_machine = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    return min(8, max(2, (os.cpu_count() or 2) // max(1, per_machine)))


def resolve_workers(workers: Optional[int], device: str = "cpu") -> int:
    """`workers` if given (at least 1), else the default for `device`."""
    return default_workers(device) if workers is None else max(1, int(workers))


def prefetched(chunks: Sequence[T], decode: Callable[[T], R], workers: int = 1) -> Iterator[R]:
    """`decode(chunk)` of each chunk, in order, with up to `workers` chunks decoding while the caller
    works on the previous one. An error in `decode` is raised where its chunk would have come out."""
    pending: Deque[Future] = deque()
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="bgbench-decode")
    try:
        upcoming = iter(chunks)
        for chunk in upcoming:
            pending.append(pool.submit(decode, chunk))
            if len(pending) >= max(1, workers):
                break
        while pending:
            done = pending.popleft().result()
            for chunk in upcoming:  # refill before handing the batch over, so decoding overlaps the caller
                pending.append(pool.submit(decode, chunk))
                break
            yield done
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def workers_field():
    """A config's `workers` field, which is also its --workers flag (None: `default_workers`)."""
    from dataclasses import field

    from ..options import flag, runtime
    return field(default=None, metadata=runtime(flag("--workers", WORKERS_HELP, type=int)))
