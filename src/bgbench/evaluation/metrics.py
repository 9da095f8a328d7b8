"""Metrics as pure functions of per-image correctness arrays.

Nothing here runs a model: every number is recomputable from the stored predictions table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np



# -- how an interval reads ---------------------------------------------------------------------------
# How an interval is written, in every table and on the page, and a missing number in JSON.
#
# A bootstrap over four images, or over images that all agree, can give an interval of zero width:
# `BG-Gap 0.0% [0.0%, 0.0%]` reads as an exact value when it is the opposite, too few images to
# measure any spread. Such an interval is written with a mark and its n (`[degenerate, n=4]`),
# never as two equal bounds.

#: Replicates of every bootstrap interval (BG-Gap, comparisons, edit drops, the probes), unless a run
#: asks for others; recorded with the seed in each run's config.
REPLICATES = 2000

#: What a zero-width interval is written as (with its n).
DEGENERATE = "degenerate"


def degenerate(lo: Optional[float], hi: Optional[float]) -> bool:
    """An interval of zero width: its resampling found no spread, which is not certainty."""
    return lo is not None and hi is not None and abs(hi - lo) <= 1e-12


def interval(lo: Optional[float], hi: Optional[float], n: Optional[int], fmt: Callable[[float], str],
             sep: str = ", ") -> str:
    """'[lo, hi]' with `fmt` for each bound; '[degenerate, n=4]' for a zero-width one; '' without bounds."""
    if lo is None or hi is None:
        return ""
    if degenerate(lo, hi):
        return f"[{DEGENERATE}, n={n if n is not None else '?'}]"
    return f"[{unsigned_zero(fmt, lo)}{sep}{unsigned_zero(fmt, hi)}]"


def unsigned_zero(fmt: Callable[[float], str], value: float) -> str:
    """`fmt(value)`, except that a value that rounds to zero is written as zero is ('0.0%', '+0.000'),
    never '-0.0%': a minus sign on a rounded zero claims a direction the number does not have."""
    text = fmt(value)
    if text.lstrip().startswith("-") and not any(c in "123456789" for c in text):
        return fmt(0.0)
    return text


def finite_or_none(value: Any) -> Any:
    """`value` with every NaN or infinite float made None, inside dicts, lists and tuples too (tuples
    become lists, numpy scalars and arrays Python's): what strict JSON can hold."""
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return finite_or_none(value.tolist())
    return value


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
    n = n01 + n10  # none discordant: the tail is the whole mass, p = 1
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


# -- the stratified bootstrap ------------------------------------------------------------------------
# A stratified bootstrap over images, as resampling weights, for the probes' intervals.
#
# Both probes report means over classes (RIVAL10's aggregation), so images are resampled within
# their class: every replicate keeps each class's size, and a class is never missing from one.
# A replicate is a vector of counts (how often each image was drawn); a statistic that is a
# weighted sum over images then costs one matrix product for all replicates, and everything an
# image carries (all its trials, both noise regions, every level) moves with it.

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
