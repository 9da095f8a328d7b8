"""Metrics: Wilson intervals, the paired BG-Gap bootstrap, McNemar."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.evaluation.metrics import accuracy, bg_gap, mcnemar, paired_difference, wilson_interval


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_contains_the_estimate_and_stays_in_unit_interval(k, n):
    k = min(k, n)
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


@pytest.mark.parametrize("k,n,lo,hi", [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
                                        (1, 29, 0.0061, 0.1718)])
def test_wilson_matches_published_values(k, n, lo, hi):
    """Newcombe (1998), Statistics in Medicine 17:857-872, Table I: the score method without continuity
    correction, printed to 4 decimals."""
    assert wilson_interval(k, n) == pytest.approx((lo, hi), abs=5e-5)


def test_intervals_shrink_with_more_data():
    a = accuracy([True] * 8 + [False] * 2)
    b = accuracy([True] * 800 + [False] * 200)
    assert a.value == b.value == 0.8
    assert (b.hi - b.lo) < (a.hi - a.lo)


@settings(deadline=None, max_examples=50)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200))
def test_bg_gap_point_is_difference_of_accuracies_and_interval_contains_it(pairs):
    same = {f"id{i}": s for i, (s, _) in enumerate(pairs)}
    rand = {f"id{i}": r for i, (_, r) in enumerate(pairs)}
    gap = bg_gap(same, rand, n_boot=300)
    expected = np.mean([s for s, _ in pairs]) - np.mean([r for _, r in pairs])
    assert gap.value == pytest.approx(expected)
    assert gap.lo - 1e-9 <= gap.value <= gap.hi + 1e-9


def test_bg_gap_pairs_on_shared_ids_only():
    same = {"a": True, "b": True, "c": False}
    rand = {"a": False, "b": True, "z": True}
    gap = bg_gap(same, rand, n_boot=100)
    assert gap.n == 2 and gap.value == pytest.approx(0.5)


def unpaired_bootstrap(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> tuple:
    """The 95% percentile interval of mean(a) - mean(b) with a and b resampled independently."""
    rng = np.random.default_rng(seed)
    boots = (a[rng.integers(0, a.size, (n_boot, a.size))].mean(axis=1)
             - b[rng.integers(0, b.size, (n_boot, b.size))].mean(axis=1))
    return tuple(np.percentile(boots, [2.5, 97.5]))


def test_paired_bootstrap_is_tighter_than_unpaired_for_correlated_data():
    rng = np.random.default_rng(0)
    a = rng.random(400) < 0.7
    b = a.copy()
    b[:20] = ~b[:20]
    est = paired_difference(a, b, n_boot=1000)
    lo, hi = unpaired_bootstrap(a.astype(float), b.astype(float), n_boot=1000, seed=1)
    # b differs from a on 20 of 400 pairs: the paired spread is about a third of the unpaired one,
    # while an interval that ignored the pairing would be about as wide as the unpaired one
    assert est.hi - est.lo < 0.75 * (hi - lo)


def test_mcnemar():
    a = np.array([True] * 30 + [False] * 10)
    b = np.array([True] * 10 + [False] * 30)
    r = mcnemar(a, b)
    assert r["a_only"] == 20 and r["b_only"] == 0
    assert r["p_value"] == pytest.approx(2 * 0.5 ** 20)
    assert mcnemar(a, a)["p_value"] == 1.0
