"""Metrics: Wilson intervals, the paired BG-Gap bootstrap, McNemar."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.evaluate.metrics import accuracy, bg_gap, mcnemar, paired_difference, wilson_interval


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_contains_the_estimate_and_stays_in_unit_interval(k, n):
    k = min(k, n)
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_wilson_matches_the_textbook_value():
    lo, hi = wilson_interval(81, 263)  # Wilson (1927) style example; computed by formula below
    p, n, z = 81 / 263, 263, 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert lo == pytest.approx(centre - half) and hi == pytest.approx(centre + half)


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


def test_paired_bootstrap_is_tighter_than_unpaired_for_correlated_data():
    rng = np.random.default_rng(0)
    a = rng.random(400) < 0.7
    b = a.copy()
    b[:20] = ~b[:20]
    est = paired_difference(a, b, n_boot=1000)
    assert est.hi - est.lo < 0.06


def test_mcnemar():
    a = np.array([True] * 30 + [False] * 10)
    b = np.array([True] * 10 + [False] * 30)
    r = mcnemar(a, b)
    assert r["a_only"] == 20 and r["b_only"] == 0
    assert r["p_value"] == pytest.approx(2 * 0.5 ** 20)
    assert mcnemar(a, a)["p_value"] == 1.0
