"""The verdict search behind `ChallengeEngine.verdicts`, and bf16-verified's fp32 checks.

`VerdictSearch` packs foregrounds into shared batches; each contributes a chunk of its untried
backgrounds that doubles after every miss, and leaves at its first fooling background. While a
foreground has tried fewer than `adapt_until` backgrounds, its next chunk is taken in the current
order for its class, which learns from every composite evaluated so far; after that its order is
frozen (a survivor is most likely never fooled, and slicing a fixed order costs nothing).

With bf16-verified:
- `confirm_fooling` recomputes in fp32 the first fooling composite of every foreground in a batch
  before any verdict is given; a composite that fp32 finds not fooling is taken as fp32 decided it
  and the search goes on, so fooled verdicts are exact;
- the near ties of each survivor are kept (`neartie`), and `reexamine_once` settles results whose
  kept margins a raised delta reaches.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, List, Optional, Protocol, Sequence, Tuple

import torch

from ... import console
from .matrix import UNMAPPED
from .neartie import NearTieLog, NearTies
from .precision import VerifiedPredictor
from .verdict import FgResult, OnResult, composite



class ChallengeEngine(Protocol):
    """What the search uses of `engine.ChallengeEngine`, named here because the engine calls this
    module and this module never imports the engine (no import cycle, not even for typing)."""

    backgrounds: torch.Tensor
    device: torch.device
    batch_size: int
    num_bg: int
    max_chunk: int
    adapt_until: int
    fill_after: int
    stats: Any  # engine.EngineStats: pairs, batches, forward_seconds
    verifier: Optional[VerifiedPredictor]

    def decide_composites(self, batch_nhwc: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]: ...

    def exact_composites(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor,
                         bi: torch.Tensor) -> torch.Tensor: ...

    def order_for(self, label: int) -> torch.Tensor: ...

    def keep_below(self) -> float: ...

    def _learn(self, idx: torch.Tensor, wrong: torch.Tensor, label: int) -> None: ...


@dataclass(eq=False)
class _Fg:
    """One foreground's search so far."""

    i: int
    y: int
    tried: Optional[torch.Tensor]  # backgrounds tried, while its order still adapts
    pos: int = 0  # how many backgrounds it has tried
    chunk: int = 1  # its next chunk (doubles after every miss)
    order: Optional[torch.Tensor] = None  # its frozen order, once it has tried `adapt_until`


@dataclass
class _Span:
    """One foreground's composites in a batch: rows start .. start + len(bg)."""

    fg: _Fg
    bg: torch.Tensor
    start: int


def takes(active: List[_Fg], batch_size: int, num_bg: int, fill_after: int) -> List[int]:
    """How many backgrounds each active foreground contributes to the next batch.

    First each takes its doubling chunk, in admission order, while the batch has room. Room still
    left (fewer active foregrounds than a batch holds: the tail of a run or a chunk) is shared
    among the survivors, foregrounds that have tried at least `fill_after` backgrounds: they are
    mostly never fooled and must see every background anyway.
    """
    room = batch_size
    out = []
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


def first_per_segment(flags: torch.Tensor, segment: torch.Tensor, count: int) -> torch.Tensor:
    """For each of `count` segments (rows labelled by `segment`), its first flagged row, or -1."""
    first = torch.full((count,), -1, dtype=torch.long)
    rows = flags.nonzero().flatten()
    if len(rows):
        first.scatter_reduce_(0, segment[rows], rows, reduce="amin", include_self=False)
    return first


def confirm_fooling(engine: ChallengeEngine, images, masks, fi: torch.Tensor, bi: torch.Tensor, pred: torch.Tensor,
                    margin: torch.Tensor, labels: torch.Tensor, segment: torch.Tensor, count: int) -> None:
    """Make the first wrong prediction of each segment (one foreground's rows) an fp32 one.

    Rows decided in bf16 (finite margin) are recomputed in fp32, in place; where fp32 is right the
    next wrong row of that segment is confirmed in turn. Costs one fp32 forward per round, for all
    segments together, and rarely more than one round.
    """
    stats = engine.verifier.stats
    while True:
        first = first_per_segment(pred != labels, segment, count)
        k = first[first >= 0]
        k = k[torch.isfinite(margin[k])]
        if not len(k):
            return
        exact = engine.exact_composites(images, masks, fi[k], bi[k])
        stats.confirmed += len(k)
        stats.overturned += int((exact == labels[k]).sum())
        pred[k] = exact
        margin[k] = math.inf


class VerdictSearch:
    """The search for one `verdicts` call (see the module docstring)."""

    def __init__(self, engine: ChallengeEngine, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
                 on_result: OnResult = None, progress: bool = False):
        self.engine = engine
        self.images, self.masks, self.labels = images, masks, labels
        self.on_result = on_result
        self.progress = progress
        self.active: List[_Fg] = []
        self.results: List[FgResult] = []
        self.log = NearTieLog(len(images)) if engine.verifier is not None else None

    def run(self, indices: Sequence[int]) -> List[FgResult]:
        queue = list(indices)[::-1]
        e = self.engine
        bar = console.progress(enabled=self.progress, total=len(queue), desc="challenge", unit="fg")
        while queue or self.active:
            while queue and len(self.active) < e.batch_size:
                i = queue.pop()
                self.active.append(_Fg(i, int(self.labels[i]), torch.zeros(e.num_bg, dtype=torch.bool)))
            spans = self._pack()
            done = self._settle(spans, self._evaluate(spans))
            bar.update(len(done))
            self.active = [s for s in self.active if s not in done]
            bar.set_postfix(pairs_s=f"{e.stats.pairs / max(bar.format_dict['elapsed'], 1e-9):.0f}")
        bar.close()
        return self.results

    def _pack(self) -> List[_Span]:
        e = self.engine
        spans, start = [], 0
        for s, n in zip(self.active, takes(self.active, e.batch_size, e.num_bg, e.fill_after)):
            if n:
                spans.append(_Span(s, self._next_backgrounds(s, n), start))
                start += n
        return spans

    def _next_backgrounds(self, s: _Fg, n: int) -> torch.Tensor:
        if s.order is not None:
            return s.order[s.pos:s.pos + n]
        o = self.engine.order_for(s.y)
        untried = o[~s.tried[o]]
        idx = untried[:n]
        s.tried[idx] = True
        if s.pos + n >= self.engine.adapt_until:  # freeze the rest in the current order
            s.order = torch.cat([torch.full((s.pos,), -1, dtype=idx.dtype), idx, untried[n:]])
            s.tried = None  # (positions before pos are never read again)
        return idx

    def _evaluate(self, spans: List[_Span]) -> torch.Tensor:
        """Predictions (CPU) of the batch; with bf16-verified, every foreground's first fooling
        composite confirmed in fp32 and the near ties logged."""
        e = self.engine
        sizes = torch.tensor([len(sp.bg) for sp in spans])
        fi = torch.repeat_interleave(torch.tensor([sp.fg.i for sp in spans]), sizes)
        bi = torch.cat([sp.bg for sp in spans])
        batch = composite(self.images, self.masks, e.backgrounds, fi.to(e.device, non_blocking=True),
                          bi.to(e.device, non_blocking=True))
        pred, margin = e.decide_composites(batch)
        if margin is not None:
            labels = torch.repeat_interleave(torch.tensor([sp.fg.y for sp in spans]), sizes)
            segment = torch.repeat_interleave(torch.arange(len(spans)), sizes)
            confirm_fooling(e, self.images, self.masks, fi, bi, pred, margin, labels, segment, len(spans))
            self.log.add(fi, bi, margin, e.keep_below())
        return pred

    def _settle(self, spans: List[_Span], pred: torch.Tensor) -> set:
        """Learn from the batch; give the verdicts it decides. Returns the foregrounds done."""
        e = self.engine
        done = set()
        for sp in spans:
            s, n = sp.fg, len(sp.bg)
            p = pred[sp.start:sp.start + n]
            wrong = p != s.y
            e._learn(sp.bg, wrong, s.y)
            s.pos += n
            hit = wrong.nonzero()
            if len(hit):
                k = int(hit[0])
                r = FgResult(s.i, True, s.pos - n + k + 1, int(sp.bg[k]), int(p[k]))
                if self.log is not None:
                    self.log.drop(s.i)
            elif s.pos >= e.num_bg:
                r = FgResult(s.i, False, e.num_bg, near=self.log.take(s.i) if self.log is not None else None)
            else:
                s.chunk = min(2 * s.chunk, e.max_chunk)
                continue
            done.add(s)
            self.results.append(r)
            if self.on_result is not None:
                self.on_result(r)
        return done


def _uint8(pred: torch.Tensor):
    return torch.where(pred < 0, torch.full_like(pred, UNMAPPED), pred).numpy().astype("uint8")


def full_result(engine: ChallengeEngine, images: torch.Tensor, masks: torch.Tensor, label: int, j: int) -> FgResult:
    """Foreground j against every background: its row and its verdict (first fooling entry confirmed)."""
    e = engine
    bg = torch.arange(e.num_bg)
    preds, margins = [], []
    for s in range(0, e.num_bg, e.batch_size):
        b = bg[s:s + e.batch_size]
        p, m = e.decide_composites(composite(images, masks, e.backgrounds, torch.full((len(b),), j, device=e.device),
                                             b.to(e.device)))
        preds.append(p)
        margins.append(m)
    pred = torch.cat(preds)
    margin = torch.cat(margins) if e.verifier is not None else None
    if margin is not None:
        confirm_fooling(e, images, masks, torch.full((e.num_bg,), j), bg, pred, margin,
                        torch.full((e.num_bg,), label), torch.zeros(e.num_bg, dtype=torch.long), 1)
    wrong = (pred != label).nonzero()
    k = int(wrong[0]) if len(wrong) else -1
    return FgResult(j, k >= 0, e.num_bg, k, int(pred[k]) if k >= 0 else -2, near=near_ties_of(e, bg, margin),
                    row=_uint8(pred))


def reexamine_once(engine: ChallengeEngine, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
                   stale: List[FgResult]) -> List[FgResult]:
    """One round of `ChallengeEngine.reexamine` over the results whose kept margins delta reaches."""
    delta = engine.verifier.delta
    stats = engine.verifier.stats
    again = [r for r in stale if r.near.needs_search(delta)]
    out = _recheck_near_ties(engine, images, masks, labels, [r for r in stale if not r.near.needs_search(delta)])
    if again:
        stats.researched += len(again)
        if again[0].row is not None:
            out += [full_result(engine, images, masks, int(labels[r.index]), r.index) for r in again]
        else:
            out += VerdictSearch(engine, images, masks, labels).run([r.index for r in again])
    before = {r.index: r.fooled for r in stale}
    stats.changed += sum(r.fooled and not before[r.index] for r in out)
    return out


def _recheck_near_ties(engine: ChallengeEngine, images, masks, labels, results: List[FgResult]) -> List[FgResult]:
    """Each result's near ties at or below delta recomputed in fp32 and applied (see `_apply`)."""
    if not results:
        return []
    delta = engine.verifier.delta
    bgs = [r.near.at_most(delta) for r in results]
    fi = torch.repeat_interleave(torch.tensor([r.index for r in results]), torch.tensor([len(b) for b in bgs]))
    exact = engine.exact_composites(images, masks, fi, torch.cat(bgs))
    engine.verifier.stats.reexamined += len(fi)
    out, start = [], 0
    for r, b in zip(results, bgs):
        out.append(_apply(r, b, exact[start:start + len(b)], int(labels[r.index]), delta))
        start += len(b)
    return out


def _apply(r: FgResult, bg: torch.Tensor, pred: torch.Tensor, label: int, delta: float) -> FgResult:
    """`r` once its composites with backgrounds `bg` are known in fp32 (`pred`): a full row takes
    them as its entries; a wrong one fools a survivor. A fooled verdict is exact and stays."""
    row = None
    if r.row is not None:
        row = r.row.copy()
        row[bg.numpy()] = _uint8(pred)
    near = r.near.settled(delta)
    wrong = (pred != label).nonzero()
    if r.fooled or not len(wrong):
        return dataclasses.replace(r, near=near, row=row)
    k = int(wrong[0])
    return FgResult(r.index, True, r.pairs, int(bg[k]), int(pred[k]), near=near if row is not None else None, row=row)


def near_ties_of(engine: ChallengeEngine, bg: torch.Tensor, margin: Optional[torch.Tensor]) -> Optional[NearTies]:
    """The near ties of one foreground's composites with backgrounds `bg` (None unless bf16-verified)."""
    if margin is None:
        return None
    log = NearTieLog(1)
    log.add(torch.zeros(len(bg), dtype=torch.long), bg, margin, engine.keep_below())
    return log.take(0)
