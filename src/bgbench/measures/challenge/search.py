"""The verdict search behind `ChallengeEngine.verdicts`, and the full rows behind `full_rows`; a
foreground's verdict (`FgResult`), and the composite every verdict is made of.

`VerdictSearch` packs foregrounds into shared batches; each contributes a chunk of its untried
backgrounds that doubles after every miss, and leaves at its first fooling background. While a
foreground has tried fewer than `adapt_until` backgrounds, its next chunk is taken in the current
order for its class, which learns from every composite evaluated so far; after that its order is
frozen (a survivor is most likely never fooled, and slicing a fixed order costs nothing).

Under bf16-verified a search decides its composites through the engine's verifier
(`verified.SearchChecks`: fooling composites confirmed in fp32, near ties kept for each verdict);
that is the only place this module meets it. `engine` is an `engine.ChallengeEngine`, typed `Any`:
this module never imports the engine (no import cycle, not even for typing).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, NamedTuple, Optional, Sequence

import numpy as np
import torch

from ... import console
from .matrix import UNMAPPED


@dataclass
class FgResult:
    """The verdict for one foreground."""

    index: int
    fooled: bool
    pairs: int  # composites evaluated
    fooling_bg: int = -1  # index of the first fooling background found, or -1
    fooling_pred: int = -2  # what it was predicted as
    # bf16-verified: what a raised delta re-examines (a verified.NearTies; the fp32 path never imports it)
    near: Optional[Any] = field(default=None, repr=False)
    row: Optional[np.ndarray] = field(default=None, repr=False)  # full mode: its predictions (uint8, 255 unmapped)


OnResult = Optional[Callable[[FgResult], None]]


def composite(images: torch.Tensor, masks: torch.Tensor, backgrounds: torch.Tensor, fi: torch.Tensor,
              bi: torch.Tensor) -> torch.Tensor:
    """NHWC uint8 composites: foreground fi[k] over background bi[k] (an exact pixel selection)."""
    return torch.where(masks[fi][..., None], images[fi], backgrounds[bi])


def first_per_segment(flags: torch.Tensor, segment: torch.Tensor, count: int) -> torch.Tensor:
    """For each of `count` segments (rows labelled by `segment`), its first flagged row, or -1."""
    first = torch.full((count,), -1, dtype=torch.long)
    rows = flags.nonzero().flatten()
    return first.scatter_reduce_(0, segment[rows], rows, reduce="amin", include_self=False)


def row_of(pred: torch.Tensor) -> np.ndarray:
    """Predictions (CPU; -1 for unmapped) as entries of a full row: uint8, `UNMAPPED` for -1."""
    return torch.where(pred < 0, torch.full_like(pred, UNMAPPED), pred).numpy().astype(np.uint8)


@dataclass(eq=False)
class _Fg:
    """One foreground's search so far."""

    i: int
    y: int
    tried: Optional[torch.Tensor]  # backgrounds tried, while its order still adapts
    pos: int = 0  # how many backgrounds it has tried
    chunk: int = 1  # its next chunk (doubles after every miss)
    order: Optional[torch.Tensor] = None  # its frozen order, once it has tried `adapt_until`


#: one foreground's composites in a batch: rows start .. start + len(bg)
_Span = NamedTuple("_Span", [("fg", _Fg), ("bg", torch.Tensor), ("start", int)])


def takes(active: List[_Fg], batch_size: int, num_bg: int, fill_after: int) -> List[int]:
    """How many backgrounds each active foreground contributes to the next batch.

    First each takes its doubling chunk, in admission order, while the batch has room. Room still
    left (fewer active foregrounds than a batch holds: the tail of a run or a chunk) is shared
    among the survivors, foregrounds that have tried at least `fill_after` backgrounds: they are
    mostly never fooled and must see every background anyway.
    """
    room, out = batch_size, []
    for s in active:
        n = min(s.chunk, num_bg - s.pos, room)
        out.append(n)
        room -= n
    while room > 0:
        open_ = [j for j, s in enumerate(active) if num_bg - s.pos > out[j] and s.pos >= fill_after]
        if not open_:
            break
        share = -(-room // len(open_))
        for j in open_:
            extra = min(share, num_bg - active[j].pos - out[j], room)
            out[j] += extra
            room -= extra
            if room == 0:
                break
    return out


class VerdictSearch:
    """The search for one `verdicts` call (see the module docstring).

    With `engine.speculate` (on CUDA), the batch after the one on the device is packed and launched
    as if nothing in the first fooled: the host packs while the device computes, and waits on the
    device only for results that are due (`evaluation.feed.Fetch`). When nothing fooled, that guess was
    the search's own next step, so it is kept; otherwise it is thrown away (the state it changed is
    restored, `_ahead`) and the next batch is packed from what happened. Batches, orders, verdicts
    and pair counts are the same with and without it. It is tried only after a batch that fooled
    nothing (a run's robust stretch, where its cost is), so fooled stretches waste nothing.
    """

    def __init__(self, engine: Any, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
                 on_result: OnResult = None, progress: bool = False):
        self.engine, self.on_result, self.progress = engine, on_result, progress
        self.images, self.masks, self.labels = images, masks, labels
        # the foregrounds being searched (`_Fg`), those waiting (indices, popped from the end), the verdicts given
        self.active, self.queue, self.results = [], [], []
        self.checks = engine.verifier.checks(images, masks, labels) if engine.verifier is not None else None
        self.bar = None

    def run(self, indices: Sequence[int]) -> List[FgResult]:
        e = self.engine
        self.queue = list(indices)[::-1]
        self.bar = console.progress(enabled=self.progress, total=len(self.queue), desc="challenge", unit="fg")
        pending, clean = None, True  # the batch on the device; whether the last one fooled nothing
        while True:
            if pending is None:
                pending = self._next()
                if pending is None:
                    break
            ahead = self._ahead(pending) if e.speculate and clean else None  # (results, batch, restore)
            # predictions (CPU) of the launched batch (with bf16-verified, through its checks)
            pred = self.checks.finish(pending.handle) if self.checks is not None else pending.handle.wait()[0]
            clean = not bool((pred != pending.labels).any())
            e.count(len(pred))
            if ahead is not None and clean:  # the guess was right: its settle and its batch stand
                self._give(ahead[0])
                pending = ahead[1]
            else:
                if ahead is not None:
                    ahead[2]()  # the guess was wrong: undo what it changed
                    if ahead[1] is not None:
                        e.stats.wasted += len(ahead[1].labels)
                self._give(self._settle(pending, pred))
                pending = None
            self.bar.set_postfix(pairs_s=f"{e.stats.pairs / max(self.bar.format_dict['elapsed'], 1e-9):.0f}")
        self.bar.close()
        return self.results

    def _next(self) -> Optional["_Batch"]:
        """Fill the active set from the queue, up to a batch's worth of foregrounds, and launch
        their next batch (None when no foreground is left)."""
        e = self.engine
        while self.queue and len(self.active) < e.batch_size:
            i = self.queue.pop()
            self.active.append(_Fg(i, int(self.labels[i]), torch.zeros(e.num_bg, dtype=torch.bool)))
        return self._launch(self._pack()) if self.active else None

    def _ahead(self, pending: "_Batch") -> tuple:
        """Settle `pending` as if nothing in it fooled and launch the batch that would follow;
        returns the results the guess gave, that batch (None when nothing is left), and a call
        that restores what the guess changed when it was wrong: the ordering's counts and jitter
        generator, the queue, the active set and each active foreground's progress (its tried mask
        included: packing makes a new one)."""
        ordering, queue, active = self.engine.ordering_state(), list(self.queue), list(self.active)
        progress = [(s, s.pos, s.chunk, s.tried, s.order) for s in self.active]

        def restore() -> None:
            for s, pos, chunk, tried, order in progress:
                s.pos, s.chunk, s.tried, s.order = pos, chunk, tried, order
            self.engine.restore_ordering(ordering)
            self.queue, self.active = queue, active
        return self._settle(pending, pending.labels), self._next(), restore

    def _pack(self) -> List[_Span]:
        spans, start, e = [], 0, self.engine
        for s, n in zip(self.active, takes(self.active, e.batch_size, e.num_bg, e.fill_after)):
            if n:
                spans.append(_Span(s, self._next_backgrounds(s, n), start))
                start += n
        return spans

    def _next_backgrounds(self, s: _Fg, n: int) -> torch.Tensor:
        if s.order is not None:
            return s.order[s.pos:s.pos + n]
        o = torch.argsort(self.engine.scores_for(s.y), descending=True)  # most likely to fool first
        untried = o[~s.tried[o]]
        idx = untried[:n]
        s.tried = s.tried.index_fill(0, idx, True)  # a new mask: a speculative step's restore puts the old one back
        if s.pos + n >= self.engine.adapt_until:  # freeze the rest in the current order
            s.order = torch.cat([torch.full((s.pos,), -1, dtype=idx.dtype), idx, untried[n:]])
            s.tried = None  # (positions before pos are never read again)
        return idx

    def _launch(self, spans: List[_Span]) -> "_Batch":
        """Queue the batch's forwards (with bf16-verified, its checks' bf16 part); nothing waits."""
        sizes = torch.tensor([len(sp.bg) for sp in spans])
        fi = torch.repeat_interleave(torch.tensor([sp.fg.i for sp in spans]), sizes)
        bi = torch.cat([sp.bg for sp in spans])
        labels = torch.repeat_interleave(torch.tensor([sp.fg.y for sp in spans]), sizes)
        return _Batch(spans, bi, labels, self.checks.launch(fi, bi) if self.checks is not None
                      else self.engine.launch_composites(self.images, self.masks, fi, bi))

    def _settle(self, batch: "_Batch", pred: torch.Tensor) -> List[FgResult]:
        """Learn from the batch (one call for all its foregrounds) and move each foreground on;
        returns the verdicts it decides (not yet given: `_give`), whose foregrounds leave the
        active set."""
        e = self.engine
        wrong = pred != batch.labels
        e.learn(batch.bg, wrong, batch.labels)
        sizes = torch.tensor([len(sp.bg) for sp in batch.spans])
        first = first_per_segment(wrong, torch.repeat_interleave(torch.arange(len(sizes)), sizes), len(sizes))
        done, out = set(), []
        for sp, k in zip(batch.spans, (first - torch.tensor([sp.start for sp in batch.spans])).tolist()):
            s, n = sp.fg, len(sp.bg)
            s.pos += n
            if k >= 0:  # its first fooling row
                r = FgResult(s.i, True, s.pos - n + k + 1, int(sp.bg[k]), int(pred[sp.start + k]))
            elif s.pos >= e.num_bg:
                r = FgResult(s.i, False, e.num_bg)
            else:
                s.chunk = min(2 * s.chunk, e.max_chunk)
                continue
            done.add(s)
            out.append(r)
        self.active = [s for s in self.active if s not in done]
        return out

    def _give(self, results: List[FgResult]) -> None:
        """Hand out verdicts (with bf16-verified, each with its near ties)."""
        for r in results:
            r = self.checks.given(r) if self.checks is not None else r
            self.results.append(r)
            if self.on_result is not None:
                self.on_result(r)
        self.bar.update(len(results))


#: a launched batch: its spans, the background and label of each row, and the handle its predictions come by
_Batch = NamedTuple("_Batch", [("spans", List[_Span]), ("bg", torch.Tensor), ("labels", torch.Tensor),
                              ("handle", Any)])


def full_results(engine: Any, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
                 indices: Sequence[int], on_result: OnResult = None) -> List[FgResult]:
    """`launch_row` of each foreground of `indices`, in order; each row's forwards are queued
    before the last row's results are waited on, so the device never waits for the host."""
    results, pending = [], None
    for j in list(indices) + [None]:
        row = launch_row(engine, images, masks, labels, j) if j is not None else None
        if pending is not None:
            results.append(pending())
            if on_result is not None:
                on_result(results[-1])
        pending = row
    return results


def launch_row(e: Any, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
               j: int) -> Callable[[], FgResult]:
    """Queue foreground j's whole row (with bf16-verified, through its checks); the call returned
    gives the row and its verdict once its predictions are back."""
    fi, bi = torch.full((e.num_bg,), j), torch.arange(e.num_bg)
    checks = e.verifier.checks(images, masks, labels) if e.verifier is not None else None
    # counted as pairs when the row is finished: a run stopped while a row is queued stores no
    # verdict of it, and its resumption evaluates that row again (counted then, once)
    handle = (checks.launch(fi, bi) if checks is not None
              else e.launch_composites(images, masks, fi, bi))

    def finish() -> FgResult:
        pred = checks.finish(handle) if checks is not None else handle.wait()[0]
        for start in range(0, e.num_bg, e.batch_size):  # the row's batches, as launched
            e.count(min(e.batch_size, e.num_bg - start))
        wrong = (pred != int(labels[j])).nonzero()
        k = int(wrong[0]) if len(wrong) else -1
        r = FgResult(j, k >= 0, e.num_bg, k, int(pred[k]) if k >= 0 else -2, row=row_of(pred))
        return checks.given(r) if checks is not None else r
    return finish
