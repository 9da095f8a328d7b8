"""Metrics as pure functions of per-image correctness arrays.

Nothing here runs a model: every number is recomputable from the stored predictions table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..intervals import REPLICATES

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95% interval."""

    value: float
    lo: float
    hi: float
    n: int

    def as_dict(self) -> dict:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "n": self.n}


def wilson_interval(k: int, n: int, z: float = Z95) -> Tuple[float, float]:
    """Wilson score interval for k successes out of n (n=0 gives (0, 1))."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would
    hi = 1.0 if k == n else min(1.0, centre + half)  # otherwise exclude the estimate itself
    return lo, hi


def accuracy(correct: Sequence[bool]) -> Estimate:
    """Accuracy with a 95% Wilson interval."""
    c = np.asarray(correct, dtype=bool)
    k, n = int(c.sum()), int(c.size)
    lo, hi = wilson_interval(k, n)
    return Estimate(k / n if n else float("nan"), lo, hi, n)


def paired(a: Mapping[str, bool], b: Mapping[str, bool]) -> Tuple[np.ndarray, np.ndarray]:
    """Align two id->correct maps on their shared ids (sorted)."""
    ids = sorted(set(a) & set(b))
    return (np.fromiter((a[i] for i in ids), bool, len(ids)),
            np.fromiter((b[i] for i in ids), bool, len(ids)))


def paired_difference(a: np.ndarray, b: np.ndarray, n_boot: int = REPLICATES, seed: int = 0) -> Estimate:
    """mean(a) - mean(b) over paired samples, with a percentile bootstrap over the pairs."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired arrays must have the same length")
    return bootstrap_mean(a - b, n_boot, seed)


def bootstrap_mean(values: np.ndarray, n_boot: int = REPLICATES, seed: int = 0) -> Estimate:
    """mean(values), with a seeded 95% percentile bootstrap over them (per-image differences, or
    per-class scores); one value is its own interval."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    if n == 1:
        return Estimate(float(v[0]), float(v[0]), float(v[0]), 1)
    rng = np.random.default_rng(seed)
    boots = v[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return Estimate(float(v.mean()), float(lo), float(hi), n)


def unpaired_difference(a: np.ndarray, b: np.ndarray, n_boot: int = REPLICATES, seed: int = 0) -> Estimate:
    """mean(a) - mean(b) over two independent samples (other images: ImageNet-R against ImageNet's
    val), with a percentile bootstrap that resamples each sample on its own."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), int(min(a.size, b.size)))
    rng = np.random.default_rng(seed)
    boots = a[rng.integers(0, a.size, (n_boot, a.size))].mean(axis=1) - \
        b[rng.integers(0, b.size, (n_boot, b.size))].mean(axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return Estimate(float(a.mean() - b.mean()), float(lo), float(hi), int(a.size + b.size))


def bg_gap(mixed_same: Mapping[str, bool], mixed_rand: Mapping[str, bool], n_boot: int = REPLICATES,
           seed: int = 0) -> Estimate:
    """BG-Gap = acc(mixed_same) - acc(mixed_rand), paired over shared foregrounds.

    When both variants hold the same foregrounds (as in the IN-9 release) the point estimate is
    exactly the difference of the two accuracies.
    """
    s, r = paired(mixed_same, mixed_rand)
    return paired_difference(s, r, n_boot=n_boot, seed=seed)


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> Dict[str, float]:
    """Exact McNemar test of two classifiers on the same images.

    Returns the discordant counts (a right & b wrong, a wrong & b right) and the two-sided
    exact binomial p-value on them.
    """
    a = np.asarray(a, dtype=bool)
    b = np.asarray(b, dtype=bool)
    n01 = int((a & ~b).sum())
    n10 = int((~a & b).sum())
    n = n01 + n10
    if n == 0:
        return {"a_only": n01, "b_only": n10, "p_value": 1.0}
    k = min(n01, n10)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return {"a_only": n01, "b_only": n10, "p_value": min(1.0, 2 * tail)}


#: How a table shows a share that does not exist (a class with no sampled image): not "nan%".
MISSING = "–"


def percent(value: Optional[float], width: int = 0, digits: int = 1) -> str:
    """`value` as a percentage for a table (`width` digits, then '%'); None or NaN as MISSING, aligned."""
    if value is None or value != value:
        return f"{MISSING:>{width + 1}}"
    return f"{100 * value:{width}.{digits}f}%"
