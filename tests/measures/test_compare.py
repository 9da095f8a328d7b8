"""Paired comparisons of two stored runs (McNemar on the same images) against tables worked out by hand."""
import json
import pytest
from scipy.stats import binomtest
from bgbench import recording
from bgbench.comparing import compare_runs
from bgbench.probing.tables import stored_predictions
from bgbench.errors import BgbenchError
from bgbench.store import Store
from helpers.run_tables import eval_run, store  # noqa: F401 (fixture)
from conftest import assert_one_line_error, run_cli


def test_compare_by_hand(store):
    # A: right on images 0-5 of original; B: right on 0-1 only. Discordant: A only 4, B only 0.
    ids = [f"a/{i}" for i in range(6)]
    a = {"original": [(i, 0, 0) for i in ids],
         "mixed_same": [(i, 0, 0) for i in ids], "mixed_rand": [(i, 0, 0 if k < 3 else 1) for k, i in enumerate(ids)]}
    b = {"original": [(i, 0, 0 if k < 2 else 1) for k, i in enumerate(ids)],
         "mixed_same": [(i, 0, 0) for i in ids], "mixed_rand": [(i, 0, 0) for i in ids]}
    ra, rb = eval_run(store, a), eval_run(store, b)
    d = compare_runs(store, ra, rb).to_dict()
    o = d["variants"]["original"]
    assert (o["a_only"], o["b_only"], o["n"]) == (4, 0, 6)
    assert o["diff"] == pytest.approx(4 / 6)
    assert o["p_value"] == pytest.approx(binomtest(4, 4, 0.5).pvalue)  # exact McNemar: binomial on discordants
    assert o["p_value"] == pytest.approx(0.125)  # textbook: 2 * 0.5 ** 4
    # BG-Gap A = 1 - 3/6 = 0.5; B = 0; difference 0.5
    assert d["bg_gap_diff"]["value"] == pytest.approx(0.5)
    assert d["bg_gap_diff"]["lo"] <= 0.5 <= d["bg_gap_diff"]["hi"]


def test_compare_refuses_runs_on_different_images(store):
    ra = eval_run(store, {"original": [("a/1", 0, 0), ("a/2", 0, 0)]})
    rb = eval_run(store, {"original": [("a/1", 0, 0), ("a/3", 0, 0)]})
    with pytest.raises(BgbenchError, match="not on the same images"):
        compare_runs(store, ra, rb)
    assert_one_line_error(run_cli("compare", ra, rb, "--db", store.path), "not on the same images", "a/2")


def test_compare_challenge_verdicts(store):
    ids = [f"a/{i}" for i in range(5)]
    runs_ = []
    for fooled in ([0, 0, 0, 1, 1], [1, 1, 1, 1, 1]):
        rid = recording.start(store, recording.Provenance(kind="challenge", config={}))
        store.add_challenge_results(rid, [(i, 0, 0, f, 10, None, None) for i, f in zip(ids, fooled)])
        runs_.append(rid)
    d = compare_runs(store, *runs_).to_dict()["challenge"]
    assert d["acc_a"]["value"] == pytest.approx(0.6) and d["acc_b"]["value"] == 0
    assert (d["a_only"], d["b_only"]) == (3, 0)  # A survives on 3 foregrounds that fool B
    assert d["p_value"] == pytest.approx(binomtest(3, 3, 0.5).pvalue)  # = 2 * 0.5 ** 3 = 0.25


def test_compare_p_value_with_discordance_both_ways(store):
    """A right and B wrong on 7 images, B right and A wrong on 2, both right on 3: the exact
    McNemar p-value is the two-sided binomial test of 2 successes in 9 at 1/2 (0.1797)."""
    ids = [f"a/{i}" for i in range(12)]
    a_right = [1] * 7 + [0] * 2 + [1] * 3
    b_right = [0] * 7 + [1] * 2 + [1] * 3
    ra = eval_run(store, {"original": [(i, 0, 0 if ok else 1) for i, ok in zip(ids, a_right)]})
    rb = eval_run(store, {"original": [(i, 0, 0 if ok else 1) for i, ok in zip(ids, b_right)]})
    o = compare_runs(store, ra, rb).to_dict()["variants"]["original"]
    assert (o["a_only"], o["b_only"]) == (7, 2)
    assert o["p_value"] == pytest.approx(binomtest(2, 9, 0.5).pvalue)
    assert o["p_value"] == pytest.approx(2 * (1 + 9 + 36) / 2 ** 9)  # by hand: 2 * P(X <= 2), X ~ Bin(9, 1/2)


def test_compare_refuses_runs_on_different_data_with_the_same_ids(tmp_path):
    """Two Synthetic-9 sets drawn with seeds 1 and 2 share every image id and label, but not their
    pixels: their data fingerprints differ, and compare refuses them in one line."""
    from bgbench.variants.synth import write_dataset
    db = tmp_path / "r.db"
    ids = []
    for seed in (1, 2):
        root = tmp_path / f"s{seed}"
        write_dataset(root, per_class=1, size=32, seed=seed, split="val", progress=False)
        proc = run_cli("eval", "--model", "timm:test_resnet", "--data", root, "--variants", "original",
                       "--quiet", "--json", "--db", db)
        assert proc.returncode == 0, proc.stderr
        ids.append(json.loads(proc.stdout)["run_id"])
    with Store(db) as store:
        pa, pb = (stored_predictions(store, r)["original"] for r in ids)
        assert pa.image_ids == pb.image_ids and pa.labels.tolist() == pb.labels.tolist()
        with pytest.raises(BgbenchError, match="different data"):
            compare_runs(store, *ids)
    assert_one_line_error(run_cli("compare", *ids, "--db", db), "different data", "s1", "s2")


def test_evals_shortcut_changes_are_compares_differences(store):
    """The shortcut table's change of eval's BG-Gap column (derived minus base) is `bgbench compare`'s
    BG-Gap difference to the last digit, and an accuracy column's is the paired difference of the
    per-image correctness, worked out here from the rows written."""
    import numpy as np
    from bgbench.evaluation.metrics import paired_difference
    from bgbench.measures.eval.changes import shortcut_change
    from bgbench.measures.registry import ShortcutColumn
    ids = [f"a/{i:02d}" for i in range(20)]
    rng = np.random.default_rng(0)
    def rows(p):
        return [(i, 0, 0 if rng.random() < p else 1) for i in ids]
    base = eval_run(store, {"original": rows(0.9), "mixed_same": rows(0.9), "mixed_rand": rows(0.4)})
    derived = eval_run(store, {"original": rows(0.8), "mixed_same": rows(0.8), "mixed_rand": rows(0.7)})
    gap = ShortcutColumn(0, "bg_gap", "BG-Gap", "bg_gap")
    got = shortcut_change(store, gap, base, derived, seed=3)
    assert got == compare_runs(store, derived, base, seed=3).to_dict()["bg_gap_diff"]
    acc = ShortcutColumn(0, "acc", "accuracy", "accuracy", "original")
    correct = {r: [p["pred"] == p["label"] for p in store.predictions(r, "original")] for r in (base, derived)}
    want = paired_difference(np.array(correct[derived], float), np.array(correct[base], float), seed=3).as_dict()
    assert shortcut_change(store, acc, base, derived, seed=3) == want
    other = eval_run(store, {"original": [(f"b/{i}", 0, 0) for i in range(20)]})
    with pytest.raises(BgbenchError, match="not on the same images"):
        shortcut_change(store, acc, base, other, seed=3)
