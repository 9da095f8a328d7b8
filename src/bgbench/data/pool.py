"""The worker pool of the dataset writer: per-image work in processes that die with their parent.

`fn(item, shared)` runs for every item, in order, in a process pool (or in this process for
one worker). Results come back in item order, so what a job writes never depends on the number
of workers. Workers run single-threaded OpenCV (and torch, for work that uses it), so a
worker count compares like with like, and results do not depend on thread counts.

A worker must not outlive its parent: a parent killed with SIGKILL cannot shut its pool down,
and its workers would write on and then wait forever for work. So a daemon thread in each worker
watches the parent's pid (`pixel_cache.watch_parent`, which the cache's decoding processes start
too).
Not `prctl(PR_SET_PDEATHSIG)`: it fires when the *thread* that forked the worker ends, and the pixel
cache keeps its pool for passes that other threads start.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from itertools import repeat
from typing import Any, Callable, Iterator, List, Optional, Sequence

from .. import console
from .pixel_cache import watch_parent


def single_threaded(torch: bool = False) -> tuple:
    """Set OpenCV (and torch, where the work uses it) to one thread; returns the previous settings."""
    import cv2
    before = (cv2.getNumThreads(), None)
    cv2.setNumThreads(1)
    if torch:
        import torch as _torch
        before = (before[0], _torch.get_num_threads())
        _torch.set_num_threads(1)
    return before


def restore_threads(before: tuple) -> None:
    import cv2
    cv2.setNumThreads(before[0])
    if before[1] is not None:
        import torch
        torch.set_num_threads(before[1])


def _init_worker(parent: int, torch: bool) -> None:
    watch_parent(parent)
    single_threaded(torch)


class Pool:
    """`map` over a process pool, or in this process when `executor` is None."""

    def __init__(self, executor: Optional[ProcessPoolExecutor], workers: int):
        self.executor, self.workers = executor, workers

    def map(self, fn: Callable[[Any, Any], Any], items: Sequence, shared: Any, desc: str = "",
            progress: bool = True, chunk_cap: int = 16) -> List[Any]:
        """[fn(item, shared) for item in items], in order; `fn` must be a module-level function."""
        bar = console.progress(enabled=progress, total=len(items), desc=desc, unit="img")
        out: List[Any] = []
        try:
            if self.executor is None or len(items) <= 1:
                results = map(fn, items, repeat(shared))
            else:
                results = self.executor.map(fn, items, [shared] * len(items),
                                            chunksize=max(1, min(chunk_cap, len(items) // (self.workers * 8))))
            for r in results:
                out.append(r)
                bar.update()
            return out
        finally:
            bar.close()


def autograd_survives_fork() -> bool:
    """Whether a forked worker can still use torch's autograd (an edit's gradient steps).

    Once a process has started autograd's thread pool (a backward run from a thread other than the
    one that built the graph: a probe, a test, a notebook), torch refuses autograd in its forked
    children ("Unable to handle autograd's threading in combination with fork-based
    multiprocessing"), so every edit that takes gradient steps would fail in the workers. A child
    forked now tries one tiny gradient: the answer, for the cost of a fork (milliseconds)."""
    if not hasattr(os, "fork"):
        return True  # the pool spawns fresh interpreters there
    pid = os.fork()
    if pid == 0:  # the child: one gradient, then out without running the parent's exit handlers
        code = 1
        try:
            import torch as _torch
            x = _torch.ones(1, requires_grad=True)
            _torch.autograd.grad((x * 2).sum(), x)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@contextmanager
def worker_pool(workers: int, items: int, torch: bool = False) -> Iterator[Pool]:
    """One pool for every pass of a job; in this process for one worker or one item.

    `torch`: the work uses torch, which then runs single-threaded too. In-process runs use the
    same settings as the workers; the caller's settings are restored afterwards.
    """
    if workers > 1 and items > 1 and torch and not autograd_survives_fork():
        console.status("warning: torch's autograd cannot run in forked workers once this process has run a "
                       "backward pass in another thread; working in this process (the same output, one core)")
        workers = 1
    if workers <= 1 or items <= 1:
        before = single_threaded(torch)
        try:
            yield Pool(None, 1)
        finally:
            restore_threads(before)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                             initargs=(os.getpid(), torch)) as ex:
        yield Pool(ex, workers)
