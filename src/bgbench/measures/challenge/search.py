"""The verdict search behind `ChallengeEngine.verdicts`, and the full rows behind `full_rows`.

`VerdictSearch` packs foregrounds into shared batches; each contributes a chunk of its untried
backgrounds that doubles after every miss, and leaves at its first fooling background. While a
foreground has tried fewer than `adapt_until` backgrounds, its next chunk is taken in the current
order for its class, which learns from every composite evaluated so far; after that its order is
frozen (a survivor is most likely never fooled, and slicing a fixed order costs nothing).

Under bf16-verified a search decides its composites through the engine's verifier
(`verified.SearchChecks`: fooling composites confirmed in fp32, near ties kept for each verdict);
that is the only place this module meets it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Protocol, Sequence

import torch

from ... import console
from .verdict import FgResult, OnResult, row_of


class SearchEngine(Protocol):
    """What the search uses of `engine.ChallengeEngine`, named here because the engine calls this
    module and this module never imports the engine (no import cycle, not even for typing)."""

    device: torch.device
    batch_size: int
    num_bg: int
    max_chunk: int
    adapt_until: int
    fill_after: int
    stats: Any  # engine.EngineStats: pairs, batches, forward_seconds
    verifier: Optional[Any]  # verified.Verifier under bf16-verified, else None

    def predict_composites(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor,
                           bi: torch.Tensor) -> torch.Tensor: ...

    def order_for(self, label: int) -> torch.Tensor: ...

    def learn(self, idx: torch.Tensor, wrong: torch.Tensor, label: int) -> None: ...


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


class VerdictSearch:
    """The search for one `verdicts` call (see the module docstring)."""

    def __init__(self, engine: SearchEngine, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
                 on_result: OnResult = None, progress: bool = False):
        self.engine = engine
        self.images, self.masks, self.labels = images, masks, labels
        self.on_result = on_result
        self.progress = progress
        self.active: List[_Fg] = []
        self.results: List[FgResult] = []
        self.checks = engine.verifier.checks(images, masks, labels) if engine.verifier is not None else None

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
        """Predictions (CPU) of the batch (with bf16-verified, through its checks)."""
        sizes = torch.tensor([len(sp.bg) for sp in spans])
        fi = torch.repeat_interleave(torch.tensor([sp.fg.i for sp in spans]), sizes)
        bi = torch.cat([sp.bg for sp in spans])
        if self.checks is not None:
            return self.checks.decide(fi, bi)
        return self.engine.predict_composites(self.images, self.masks, fi, bi)

    def _settle(self, spans: List[_Span], pred: torch.Tensor) -> set:
        """Learn from the batch; give the verdicts it decides. Returns the foregrounds done."""
        e = self.engine
        done = set()
        for sp in spans:
            s, n = sp.fg, len(sp.bg)
            p = pred[sp.start:sp.start + n]
            wrong = p != s.y
            e.learn(sp.bg, wrong, s.y)
            s.pos += n
            hit = wrong.nonzero()
            if len(hit):
                k = int(hit[0])
                r = FgResult(s.i, True, s.pos - n + k + 1, int(sp.bg[k]), int(p[k]))
            elif s.pos >= e.num_bg:
                r = FgResult(s.i, False, e.num_bg)
            else:
                s.chunk = min(2 * s.chunk, e.max_chunk)
                continue
            if self.checks is not None:
                r = self.checks.given(r)
            done.add(s)
            self.results.append(r)
            if self.on_result is not None:
                self.on_result(r)
        return done


def full_result(engine: SearchEngine, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int],
                j: int) -> FgResult:
    """Foreground j against every background: its row and its verdict (with bf16-verified, its
    first fooling entry confirmed in fp32, through the verifier's checks)."""
    e = engine
    fi, bi = torch.full((e.num_bg,), j), torch.arange(e.num_bg)
    checks = e.verifier.checks(images, masks, labels) if e.verifier is not None else None
    pred = checks.decide(fi, bi) if checks is not None else e.predict_composites(images, masks, fi, bi)
    wrong = (pred != int(labels[j])).nonzero()
    k = int(wrong[0]) if len(wrong) else -1
    r = FgResult(j, k >= 0, e.num_bg, k, int(pred[k]) if k >= 0 else -2, row=row_of(pred))
    return checks.given(r) if checks is not None else r
