"""A stratified bootstrap over images, as resampling weights, for the probes' intervals.

Both probes report means over classes (RIVAL10's aggregation), so images are resampled within
their class: every replicate keeps each class's size, and a class is never missing from one.
A replicate is a vector of counts (how often each image was drawn); a statistic that is a
weighted sum over images then costs one matrix product for all replicates, and everything an
image carries (all its trials, both noise regions, every level) moves with it.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np



def stratified_weights(groups: Sequence[int], replicates: int, seed: int) -> np.ndarray:
    """(replicates, N) counts: for each group (in sorted order), its n images drawn n times with
    replacement, uniformly, from a NumPy Generator seeded with `seed`."""
    groups = np.asarray(groups)
    rng = np.random.default_rng(seed)
    weights = np.zeros((replicates, groups.size), dtype=np.float64)
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        weights[:, members] = rng.multinomial(members.size, np.full(members.size, 1.0 / members.size),
                                              size=replicates)
    return weights


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> Tuple[float, float]:
    """The central `level` percentile interval of bootstrap replicates (NaN replicates ignored)."""
    s = np.asarray(samples, dtype=np.float64)
    s = s[~np.isnan(s)]
    if s.size == 0:
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(s, [tail, 100 - tail])
    return float(lo), float(hi)
