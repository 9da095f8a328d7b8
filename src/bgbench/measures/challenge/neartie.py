"""What a bf16-verified foreground keeps so that a raised delta can re-examine it.

A bf16 decision with margin m is proven equal to fp32's while the deviation spread stays below m,
and delta is the run's bound on that spread. When an audit raises delta, every earlier composite
whose margin the new delta reaches has to be recomputed in fp32 (and a survivor's may fool).
Keeping every margin would cost a number per composite, so each foreground keeps:
- its *near ties*: the bf16-decided composites its verdict rests on whose margin was at most
  `KEEP` x delta when they were decided (the `CAP` smallest at most), and
- its *floor*: the smallest margin among the bf16 decisions it did not keep.
A raised delta below the floor is settled by recomputing the near ties at or below it; a delta at
or above the floor (delta grew more than `KEEP`-fold, or the cap evicted a margin) needs the
foreground's search again. Decisions made in fp32 (rechecks, audits) carry an infinite margin and
are never kept: they are exact already.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import List, Tuple

import torch

#: near ties are the margins at most this many times the delta in use when they were decided
KEEP = 4.0
#: the most near ties one foreground keeps (the smallest margins); the rest go to its floor
CAP = 256


def _empty() -> Tuple[torch.Tensor, torch.Tensor]:
    return torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.float32)


@dataclass
class NearTies:
    """One foreground's near ties (background indices and their bf16 margins) and floor."""

    bg: torch.Tensor = field(default_factory=lambda: _empty()[0])
    margin: torch.Tensor = field(default_factory=lambda: _empty()[1])
    floor: float = math.inf

    def lowest(self) -> float:
        """The smallest margin it keeps or has folded into its floor (inf: nothing to re-examine)."""
        return min(self.floor, float(self.margin.min())) if len(self.margin) else self.floor

    def needs_search(self, delta: float) -> bool:
        """True when a margin that was not kept may be at or below `delta`."""
        return self.floor <= delta

    def at_most(self, delta: float) -> torch.Tensor:
        """The kept backgrounds whose margin `delta` reaches, smallest margin first."""
        sel = self.margin <= delta
        return self.bg[sel][torch.argsort(self.margin[sel], stable=True)]

    def settled(self, delta: float) -> "NearTies":
        """Without the near ties at or below `delta` (recomputed in fp32, hence exact now)."""
        keep = self.margin > delta
        return NearTies(self.bg[keep], self.margin[keep], self.floor)

    def capped(self, cap: int = CAP) -> "NearTies":
        if len(self.margin) <= cap:
            return self
        order = torch.argsort(self.margin, stable=True)
        floor = min(self.floor, float(self.margin[order[cap]]))
        return NearTies(self.bg[order[:cap]], self.margin[order[:cap]], floor)

    def to_json(self) -> str:
        return json.dumps({"bg": self.bg.tolist(), "margin": self.margin.tolist(),
                           "floor": None if math.isinf(self.floor) else self.floor})

    @classmethod
    def from_json(cls, text: str) -> "NearTies":
        d = json.loads(text)
        return cls(torch.tensor(d["bg"], dtype=torch.long), torch.tensor(d["margin"], dtype=torch.float32),
                   math.inf if d["floor"] is None else float(d["floor"]))


class NearTieLog:
    """The near ties of every foreground of one search, gathered a batch at a time.

    A batch adds its kept composites with a few tensor operations, whatever the number of
    foregrounds in it; a foreground's own `NearTies` are taken out when its verdict is given.
    """

    def __init__(self, num_fg: int):
        self.floor = torch.full((num_fg,), math.inf)
        self._fg: List[torch.Tensor] = []
        self._bg: List[torch.Tensor] = []
        self._margin: List[torch.Tensor] = []

    def add(self, fg: torch.Tensor, bg: torch.Tensor, margin: torch.Tensor, keep_below: float) -> None:
        """Composites (foreground, background) decided with `margin` (inf where fp32 decided)."""
        decided_in_bf16 = torch.isfinite(margin)
        keep = decided_in_bf16 & (margin <= keep_below)
        rest = decided_in_bf16 & ~keep
        if bool(rest.any()):
            self.floor.scatter_reduce_(0, fg[rest], margin[rest].float(), reduce="amin")
        if bool(keep.any()):
            self._fg.append(fg[keep])
            self._bg.append(bg[keep])
            self._margin.append(margin[keep].float())

    def take(self, i: int) -> NearTies:
        """Foreground `i`'s near ties, removed from the log."""
        if not self._fg:
            return NearTies(floor=float(self.floor[i]))
        fg, bg, margin = torch.cat(self._fg), torch.cat(self._bg), torch.cat(self._margin)
        mine = fg == i
        self._fg, self._bg, self._margin = [fg[~mine]], [bg[~mine]], [margin[~mine]]
        return NearTies(bg[mine], margin[mine], float(self.floor[i])).capped()

    def drop(self, i: int) -> None:
        """Forget foreground `i` (fooled: its verdict is exact and rests on no near tie)."""
        self.take(i)
