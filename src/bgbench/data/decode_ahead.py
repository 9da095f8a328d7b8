"""Decode the next image set while the device computes this one.

Why: eval runs its variants one after another, each a first pass into the pixel cache (`pixel_cache.
pixels_of`) whose forward starts on its first images. That start costs the card its wait for the
cache key, the headers and the first task of the next variant, after the last batch of this one:
tens of milliseconds a variant, and on the GPU run's 450-image variants a quarter of the forward's
time. On a card the decoding processes finish a variant long before its forward does (16 cores
decode about 20,000 images/s, a ResNet-50 forward takes 2,700-20,000), so the next variant's pass
can start as soon as this one's decoding ends, and be written (or well under way) when the loop
reaches it.

`DecodeAhead(lists)` runs one background thread that makes each list's pass in turn, starting the
next when the last one's decoding has ended; `pixels(k)` hands list k's `Pixels` to the loop (once
its pass has started: its images then stream as they land). A pass that fails hands its error to
the one who asks for that list, as `pixels_of` would have raised it, and the lists after it are
left alone. `close()` stops it from starting another pass. The images it decoded count as decoded
in the run's record, not as read from the cache, since this run decoded them.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import List, Optional, Sequence

from .pixel_cache import Pixels, enabled, pixels_of


class DecodeAhead:
    """The pixels of `lists` (each a list of items), decoded one list after another in the
    background; `pixels(k)` is list k's."""

    def __init__(self, lists: Sequence[Sequence]):
        self.lists = [list(items) for items in lists]
        self.futures: List[Future] = [Future() for _ in self.lists]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bgbench-decode-ahead", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for items, future in zip(self.lists, self.futures):
            if self.stopped.is_set() or not future.set_running_or_notify_cancel():
                break
            try:
                pixels = pixels_of(items)
            except BaseException as e:  # the loop gets it when it asks for this list
                future.set_exception(e)
                break
            future.set_result(pixels)
            if pixels.filling is not None:
                pixels.filling.join()  # this list's decoding has ended: the next may start
                if pixels.filling.error is not None:
                    break
        for future in self.futures:  # lists never started: their askers decode them themselves
            future.cancel()

    def pixels(self, k: int) -> Pixels:
        """List k's pixels: the background's pass (waited for until it has started), or, where the
        background stopped before it, `pixels_of` in the caller."""
        try:
            return self.futures[k].result()
        except Exception:
            if self.futures[k].cancelled():
                return pixels_of(self.lists[k])
            raise

    def close(self) -> None:
        """Start no further pass (one under way finishes: its entry is then whole in the cache)."""
        self.stopped.set()


def decode_ahead(lists: Sequence[Sequence], device: str) -> Optional[DecodeAhead]:
    """A `DecodeAhead` of `lists` where it pays: with the pixel cache on and the network on an
    accelerator, which leaves the host's cores idle during the forward. On the CPU the forward
    needs them, and the next pass decoding meanwhile would only reorder the same work; None there."""
    if not enabled() or str(device).startswith("cpu") or len(lists) < 2:
        return None
    return DecodeAhead(lists)
