"""Estimating the challenge from a sample: the seeded order of foregrounds and the stopping rule.

Pure functions, no model. Every challenge run (sampled or not) visits foregrounds in the order
`sample_order(seed, ids, labels)`, in chunks, so that what is done at any chunk boundary is a
*prefix* of that order:
- `--sample N` stops after the first N;
- `--halfwidth H` stops at the first chunk boundary where the 95% Wilson half-width of the
  never-fooled share over the done prefix is at most H;
- a later run with a larger N, or with neither option, continues the same prefix, so no verdict is
  ever recomputed, and an interrupted full run is itself a valid sample.

The order is a deterministic function of (seed, image ids, labels): each id's position inside its
class comes from a keyed hash of (seed, id), not from a generator's state, and classes are
interleaved systematically, so every prefix of length n holds within one foreground of
n * n_c / n_total of each class c (proportional stratification). Each verdict in the prefix is
exact; only the share is estimated. Stratifying with proportional allocation never widens the
variance of the estimate compared with simple random sampling, so the Wilson interval, computed as
for a simple random sample, errs on the wide side (it also ignores the finite-population
correction, which would narrow it further).
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ...evaluation.metrics import wilson_interval


def _key(seed: int, text: str) -> int:
    """A 64-bit hash of (seed, text), stable across processes and platforms (unlike hash())."""
    return int.from_bytes(hashlib.blake2b(f"{seed}\0{text}".encode(), digest_size=8).digest(), "big")


def sample_order(seed: int, fg_ids: Sequence[str], fg_labels: Sequence[int]) -> List[int]:
    """Positions into `fg_ids`, in the seeded, class-stratified order a run visits them.

    Within class c (n_c foregrounds) the ids are ranked r = 0..n_c-1 by their keyed hash; the
    foreground of rank r is placed at (r + u_c) / n_c, where u_c in [0, 1) is the class's own keyed
    offset. Sorting by that key interleaves the classes in proportion to their sizes.
    """
    if len(fg_ids) != len(fg_labels):
        raise ValueError("fg_ids and fg_labels must have the same length")
    by_class: Dict[int, List[int]] = {}
    for i, y in enumerate(fg_labels):
        by_class.setdefault(int(y), []).append(i)
    keyed: List[Tuple[float, int, int, int]] = []
    for c, members in by_class.items():
        members = sorted(members, key=lambda i: (_key(seed, fg_ids[i]), fg_ids[i]))
        u = _key(seed, f"class:{c}") / 2.0 ** 64
        keyed.extend(((r + u) / len(members), _key(seed, f"class:{c}"), c, i) for r, i in enumerate(members))
    return [i for *_, i in sorted(keyed)]


def wilson_halfwidth(k: int, n: int) -> float:
    """Half the width of the 95% Wilson interval for k of n."""
    lo, hi = wilson_interval(k, n)
    return (hi - lo) / 2


def done_prefix(order: Sequence[int], fg_ids: Sequence[str], done: Mapping[str, object]) -> int:
    """Length of the longest prefix of `order` whose foregrounds all have a verdict in `done`."""
    return sum(1 for _ in itertools.takewhile(lambda i: fg_ids[i] in done, order))


@dataclass(frozen=True)
class SamplePlan:
    """Which prefix of the seeded order a run may visit, in chunks, and when it may stop early.

    Attributes:
        order: positions into the dataset's foregrounds (`sample_order`).
        limit: how many of `order` at most (`--sample N`, or all of them).
        halfwidth: stop once the 95% Wilson half-width of the prefix is at most this.
        chunk: foregrounds per chunk; the stopping rule is checked at chunk boundaries only.
        first: the first chunk's size; each later chunk is as large as all before it, up to
            `chunk` (boundaries first, 2 first, 4 first, ... then every `chunk`), so that a
            `--halfwidth` run can stop after a few foregrounds on a small dataset and still
            evaluates large chunks (many foregrounds per batch) once it is under way.
    """

    order: Tuple[int, ...]
    limit: int
    halfwidth: Optional[float] = None
    chunk: int = 256
    first: Optional[int] = None

    @classmethod
    def build(cls, seed: int, fg_ids: Sequence[str], fg_labels: Sequence[int], sample: Optional[int] = None,
              halfwidth: Optional[float] = None, chunk: int = 256, first: Optional[int] = None) -> "SamplePlan":
        order = tuple(sample_order(seed, fg_ids, fg_labels))
        return cls(order=order, limit=len(order) if sample is None else min(int(sample), len(order)),
                   halfwidth=halfwidth, chunk=max(1, int(chunk)), first=None if first is None else max(1, int(first)))

    def chunks(self) -> Iterator[Tuple[int, int]]:
        """(start, end) positions into `order`, covering [0, limit): boundaries double from `first`
        until chunks reach `chunk`."""
        first, start = min(self.first or self.chunk, self.chunk), 0
        while start < self.limit:
            end = min(start + min(max(start, first), self.chunk), self.limit)
            yield start, end
            start = end

    def shard(self, start: int, end: int, rank: int, world: int) -> List[int]:
        """The foregrounds (positions into the dataset) of chunk [start, end) that `rank` evaluates."""
        return [self.order[k] for k in range(start, end) if k % world == rank]

    def should_stop(self, never_fooled: int, n: int) -> bool:
        """The `--halfwidth` rule, for a done prefix of n foregrounds of which `never_fooled` held."""
        return self.halfwidth is not None and n > 0 and wilson_halfwidth(never_fooled, n) <= self.halfwidth
