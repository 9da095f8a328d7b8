"""Estimating the challenge from a sample: seeded stratified order, --sample, --halfwidth, extension."""
import dataclasses
import math
import sqlite3

import numpy as np
import pytest

from bgbench.errors import BgbenchError
from bgbench.measures.challenge import runner as challenge_run
from bgbench.measures.challenge.config import ChallengeConfig
from bgbench.measures.challenge.sample import SamplePlan, done_prefix, sample_order, wilson_halfwidth
from bgbench.store import Store
from helpers.challenge_toys import colour_model, write_colour_dataset
from conftest import assert_one_line_error, run_cli


@pytest.fixture(scope="module")
def colour_root(tmp_path_factory):
    return write_colour_dataset(tmp_path_factory.mktemp("colour"), per_class=30, size=16, seed=0)


def run_challenge(model, root, store, cfg, progress=False):
    """The challenge through the public API, then recorded (its run finished), as the CLI does."""
    import bgbench
    report = bgbench.challenge(model, root, store, progress=progress, **dataclasses.asdict(cfg))
    bgbench.record(report, store)
    return report


def _ids(per_class):
    ids, labels = [], []
    for c, n in enumerate(per_class):
        ids += [f"c{c}/img{k}" for k in range(n)]
        labels += [c] * n
    return ids, labels


def test_order_is_a_seeded_stratified_function_of_the_ids():
    ids, labels = _ids([50, 30, 20, 7])
    order = sample_order(0, ids, labels)
    assert sorted(order) == list(range(len(ids)))
    assert order == sample_order(0, ids, labels)
    assert order != sample_order(1, ids, labels)
    # a function of the ids, not of their positions: shuffling the input gives the same id order
    perm = np.random.default_rng(3).permutation(len(ids))
    shuffled = sample_order(0, [ids[i] for i in perm], [labels[i] for i in perm])
    assert [ids[perm[i]] for i in shuffled] == [ids[i] for i in order]
    # every prefix is stratified: within one foreground of the proportional count of each class
    sizes = np.bincount(labels)
    counts = np.zeros(len(sizes))
    for n, i in enumerate(order, 1):
        counts[labels[i]] += 1
        assert np.abs(counts - n * sizes / len(ids)).max() <= 1, n
    # and it is not simply the input order within a class
    assert [i for i in order if labels[i] == 0] != sorted(i for i in order if labels[i] == 0)


def test_stopping_rule_and_done_prefix():
    z = 1.959963984540054
    k, n = 30, 100
    p = k / n
    by_hand = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_halfwidth(k, n) == pytest.approx(by_hand)
    plan = SamplePlan.build(0, *_ids([10, 10]), halfwidth=by_hand + 1e-9, chunk=7)
    assert plan.should_stop(k, n) and not SamplePlan.build(0, *_ids([10]), halfwidth=by_hand - 1e-9).should_stop(k, n)
    assert not SamplePlan.build(0, *_ids([10])).should_stop(k, n)  # no --halfwidth: never stops early
    assert list(plan.chunks()) == [(0, 7), (7, 14), (14, 20)]
    assert SamplePlan.build(0, *_ids([10, 10]), sample=9, chunk=4).limit == 9
    assert SamplePlan.build(0, *_ids([10, 10]), sample=99).limit == 20
    assert plan.shard(0, 7, 1, 2) == [plan.order[1], plan.order[3], plan.order[5]]
    ids, _ = _ids([10, 10])
    done = {ids[i]: True for i in plan.order[:5]} | {ids[plan.order[9]]: True}
    assert done_prefix(plan.order, ids, done) == 5


@pytest.mark.parametrize("kwargs, words", [
    ({"sample": 0}, "--sample"), ({"sample": -3}, "--sample"), ({"sample": 2.5}, "--sample"),
    ({"sample": True}, "--sample"), ({"halfwidth": 0}, "--halfwidth"), ({"halfwidth": 0.5}, "--halfwidth"),
    ({"halfwidth": -0.1}, "--halfwidth"), ({"halfwidth": float("nan")}, "--halfwidth"),
    ({"full": True, "sample": 5}, "--full"), ({"precision": "bf17"}, "--precision"),
    ({"verify_safety": 0.5}, "--verify-safety"), ({"batch_size": 0}, "--batch-size")])
def test_config_rejects_bad_numbers_in_one_line(kwargs, words):
    with pytest.raises(BgbenchError) as e:
        ChallengeConfig(**kwargs)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_cli_rejects_bad_sample_and_halfwidth(colour_root, tmp_path):
    for bad in (["--sample", "0"], ["--halfwidth", "0.7"], ["--full", "--halfwidth", "0.1"]):
        proc = run_cli("challenge", "--model", "timm:test_resnet", "--data", colour_root, "--db", tmp_path / "r.db",
                       "--quiet", *bad)
        assert_one_line_error(proc, bad[-2])


def _spy_decodes(monkeypatch):
    decoded = []
    real = challenge_run.load_foregrounds

    def spy(pairs, indices):
        decoded.extend(pairs[i][0].image_id for i in indices)
        return real(pairs, indices)
    monkeypatch.setattr(challenge_run, "load_foregrounds", spy)
    return decoded


def _rows(db, run_id):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT image_id, label, clean_pred, fooled, pairs, fooling_bg FROM challenge_fg "
                       "WHERE run_id=? ORDER BY image_id", (run_id,)).fetchall()
    con.close()
    return rows


def test_sampled_run_is_extended_to_the_full_set_without_redoing_a_verdict(colour_root, tmp_path, monkeypatch):
    decoded = _spy_decodes(monkeypatch)
    model = colour_model()
    with Store(tmp_path / "r.db") as store:
        small = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=32, sample=45, seed=5),
                              progress=False)
        assert small.estimate and small.total == 45 and len(decoded) == 45
        assert small.sample == {"seed": 5, "n": 45, "population": 270, "requested": 45, "halfwidth_target": None,
                                "halfwidth": pytest.approx(wilson_halfwidth(45 - small.fooled, 45))}
        assert [r["n"] for r in small.per_class] == [5] * 9  # stratified
        assert store.get_run(small.run_id)["status"] == "sampled" and store.get_run(small.run_id)["seed"] == 5
        assert "ESTIMATE" in small.text() and "seed 5" in small.text()
        first = set(decoded)
        before = _rows(tmp_path / "r.db", small.run_id)

        bigger = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=32, sample=100, seed=5),
                               progress=False)
        assert bigger.run_id == small.run_id and bigger.total == 100
        assert len(decoded) == 100 and not first & set(decoded[45:])  # only the 55 new foregrounds
        assert set(before) <= set(_rows(tmp_path / "r.db", small.run_id))  # stored verdicts untouched

        full = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=32, seed=5), progress=False)
        assert full.run_id == small.run_id and not full.estimate and full.total == 270
        assert len(decoded) == 270 and len(set(decoded)) == 270
        assert store.get_run(small.run_id)["status"] == "done"
        assert "ESTIMATE" not in full.text()
        other_seed = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=32, sample=10, seed=6),
                                   progress=False)
        assert other_seed.run_id != small.run_id  # the seed is part of the run's identity
    with Store(tmp_path / "fresh.db") as store:
        fresh = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=7), progress=False)
    assert [r[:4] for r in _rows(tmp_path / "fresh.db", fresh.run_id)] == \
        [r[:4] for r in _rows(tmp_path / "r.db", full.run_id)]


def test_full_accuracy_lies_inside_the_sampled_intervals(colour_root, tmp_path):
    """On this fixed dataset and model, samples of 60 of 270 foregrounds for seeds 0-4.

    The reported 95% Wilson interval would miss the full-set value for about 1 seed in 20 on a
    different dataset, so the check uses a 99.9% Wilson interval (z = 3.29) recomputed from the
    sample's counts: wide enough not to be flaky if the data or model change, while a biased sample
    (one class only, or the first foregrounds to finish, which are the fooled ones) falls outside it.
    """
    from bgbench.evaluation.metrics import wilson_interval
    model = colour_model()
    with Store(tmp_path / "r.db") as store:
        full = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=64, seed=99), progress=False)
        truth = full.challenge_accuracy.value
        assert 0.1 < truth < 0.9  # the check can fail
        estimates = []
        for seed in range(5):
            est = run_challenge(model, colour_root, store, ChallengeConfig(batch_size=64, sample=60, seed=seed),
                                progress=False)
            c = est.challenge_accuracy
            assert est.estimate and c.n == 60
            assert (c.lo, c.hi) == pytest.approx(wilson_interval(60 - est.fooled, 60))
            lo, hi = wilson_interval(60 - est.fooled, 60, z=3.29)
            assert lo <= truth <= hi, (seed, c, truth)
            estimates.append(c.value)
    assert len(set(estimates)) > 1  # different seeds draw different samples


def test_halfwidth_stops_at_the_first_chunk_where_the_interval_is_narrow_enough(colour_root, tmp_path):
    model = colour_model()
    cfg = ChallengeConfig(batch_size=16, halfwidth=0.09, seed=2)
    with Store(tmp_path / "r.db") as store:
        rep = run_challenge(model, colour_root, store, cfg, progress=False)
        rows = {r["image_id"]: r["fooled"] for r in store.challenge_results(rep.run_id)}
    assert rep.estimate and rep.sample["halfwidth"] <= 0.09 and rep.sample["halfwidth_target"] == 0.09
    n = rep.total
    # the rule is checked after 16, 32, 64 foregrounds, then every max(32, 2 x batch size) = 32
    boundaries = [16, 32, 64] + list(range(96, 270, 32))
    assert n in boundaries and len(rows) == n
    from bgbench.data.in9 import discover
    pairs = discover(colour_root).foregrounds()
    ids = [it.image_id for it, _ in pairs]
    order = sample_order(2, ids, [it.label for it, _ in pairs])
    held = [not rows[ids[i]] for i in order[:n]]
    assert wilson_halfwidth(sum(held), n) <= 0.09
    earlier = boundaries[boundaries.index(n) - 1]
    assert wilson_halfwidth(sum(held[:earlier]), earlier) > 0.09  # the boundary before was not enough


def test_halfwidth_checks_boundaries_that_double_from_a_small_first_chunk():
    plan = SamplePlan.build(0, *_ids([50, 50]), halfwidth=0.1, chunk=32, first=4)
    ends = [end for _, end in plan.chunks()]
    assert ends == [4, 8, 16, 32, 64, 96, 100]  # a hand-worked schedule: doubling, then every 32
    assert [e for _, e in SamplePlan.build(0, *_ids([50, 50]), chunk=32).chunks()] == [32, 64, 96, 100]


