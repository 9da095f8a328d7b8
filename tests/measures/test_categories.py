"""The prediction categories (paper Table 3) against cases worked out by hand, from stored runs of 9-class and 1000-class models."""
import json
import sys
import numpy as np
import pytest
from hypothesis import given, strategies as st
from bgbench import recording
from bgbench.measures.categories.summary import CATEGORIES, categorize, prediction_categories
from helpers.run_tables import CLASSES, eval_run, store  # noqa: F401 (fixture)
from conftest import assert_one_line_error, run_cli


# (label, original, mixed_rand, only_bg_t) -> expected category, each case worked out by hand
HAND = [
    (0, 0, 0, 2, "BG Irrelevant"),   # full right, fg right
    (0, 1, 2, 0, "BG Irrelevant"),   # full wrong, fg wrong
    (1, 1, 0, 1, "BG Required"),     # full right, fg wrong, bg right
    (1, 1, 0, 2, "BG+FG Required"),  # full right, fg wrong, bg wrong
    (2, 0, 2, 0, "BG Fools"),        # full wrong (0), fg right, bg says 0 too
    (2, 1, 2, 0, "Other"),           # full wrong (1), fg right, bg says another wrong class
    (2, 1, 2, 2, "Other"),           # full wrong, fg right, bg right
]


def test_categorize_every_case_by_hand():
    y, o, m, b, want = zip(*HAND)
    got = categorize(np.array(y), np.array(o), np.array(m), np.array(b))
    assert [CATEGORIES[g] for g in got] == list(want)


# A 1000-class model under the argmax mapping: -1 is an ImageNet class that maps to no IN-9 class
# (281 tabby cat and 285 Egyptian cat are two of them). (label, original, mixed_rand, only_bg_t,
# raw top-1 on original, raw top-1 on only_bg_t) -> expected category, each worked out by hand.
UNMAPPED = [
    (0, -1, 0, -1, 285, 285, "BG Fools"),        # full wrong, fg right, bg: the very same unmapped class
    (0, -1, 0, -1, 285, 281, "Other"),           # two different unmapped classes are not "the same class"
    (0, -1, 0, 0, 285, 100, "Other"),            # full wrong, fg right, bg right
    (0, 1, 0, -1, 100, 285, "Other"),            # full says IN-9 class 1, bg an unmapped class
    (0, -1, 0, 1, 285, 100, "Other"),            # full unmapped, bg IN-9 class 1
    (0, -1, -1, -1, 285, 285, "BG Irrelevant"),  # full wrong, fg wrong (unmapped): as wrong as each other
    (0, -1, -1, 0, 285, 100, "BG Irrelevant"),
    (0, 0, -1, 0, 100, 100, "BG Required"),      # full right, fg unmapped (wrong), bg right
    (0, 0, -1, -1, 100, 285, "BG+FG Required"),  # full right, fg wrong, bg unmapped (wrong)
    (0, 0, 0, -1, 100, 285, "BG Irrelevant"),    # full right, fg right
]


def test_categorize_unmapped_predictions_by_hand():
    y, o, m, b, o_raw, b_raw, want = (np.array(c) for c in zip(*UNMAPPED))
    got = categorize(y, o, m, b, full_raw=o_raw, bg_raw=b_raw)
    assert [CATEGORIES[g] for g in got] == want.tolist()
    # without the raw classes two -1 predictions cannot be told apart, so no BG Fools is claimed
    assert CATEGORIES[categorize(y[:1], o[:1], m[:1], b[:1])[0]] == "Other"


def test_categories_of_a_stored_1000_class_run_compare_raw_classes(store):
    """Stored as `bgbench eval` stores a 1000-class model: pred -1 plus the raw top-5. Under the
    stored decisions and re-decided with --mapping argmax, the same unmapped class on the full
    image and the background is BG Fools, two different unmapped classes are Other."""
    raw = {"a/same": (285, 0, 285), "a/diff": (285, 0, 281)}  # original, mixed_rand, only_bg_t top-1
    rid = recording.start(store, recording.Provenance(kind="eval", config={"classes": list(CLASSES), "split": "val"}))
    rows = []
    for iid, tops in raw.items():
        for v, top in zip(("original", "mixed_rand", "only_bg_t"), tops):
            pred = 0 if top == 0 else -1  # ImageNet class 0 (tench) maps to IN-9 fish; call it class 0 here
            rows.append((v, iid, 0, pred, 0.5, json.dumps([top, 1, 2, 3, 4]), json.dumps([0.5, 0.1, 0.1, 0.1, 0.1]),
                         json.dumps([0.1] * 9)))
    store.insert("predictions", rid, rows)
    store.finish_run(rid)
    d = prediction_categories(store, rid).to_dict()
    assert d["n"] == 2 and d["overall"]["BG Fools"] == pytest.approx(0.5) and d["overall"]["Other"] == pytest.approx(0.5)
    # re-decided: tench (0) maps to fish (IN-9 class 8), so the foreground is wrong for label 0 and
    # both images become BG Irrelevant (full and fg both wrong)
    again = prediction_categories(store, rid, mapping="argmax").to_dict()
    assert again["overall"]["BG Irrelevant"] == pytest.approx(1.0)


def _hand_run(store):
    table = {v: [] for v in ("original", "mixed_rand", "only_bg_t")}
    for k, (y, o, m, b, _) in enumerate(HAND):
        iid = f"{CLASSES[y]}/img{k}"
        table["original"].append((iid, y, o))
        table["mixed_rand"].append((iid, y, m))
        table["only_bg_t"].append((iid, y, b))
    return eval_run(store, table)


def test_prediction_categories_from_the_store_overall_and_per_class(store, monkeypatch):
    import bgbench.models.options as registry

    def refuse(*a, **k):
        raise AssertionError("the categories analysis must not load a model")
    monkeypatch.setattr(registry, "create_model", refuse)
    before = set(sys.modules)
    d = prediction_categories(store, _hand_run(store)).to_dict()
    assert not any(m.startswith("timm") for m in set(sys.modules) - before)
    assert d["n"] == 7
    assert d["overall"] == pytest.approx({"BG Irrelevant": 2 / 7, "BG Required": 1 / 7, "BG+FG Required": 1 / 7,
                                          "BG Fools": 1 / 7, "Other": 2 / 7})
    assert d["per_class"]["a"] == pytest.approx({"BG Irrelevant": 1.0, "BG Required": 0, "BG+FG Required": 0,
                                                 "BG Fools": 0, "Other": 0})
    assert d["per_class"]["b"]["BG Required"] == pytest.approx(0.5)
    assert d["per_class"]["c"]["Other"] == pytest.approx(2 / 3)
    for shares in [d["overall"], *d["per_class"].values()]:
        assert sum(shares.values()) == pytest.approx(1.0)


def test_categories_cli_never_imports_timm(store, tmp_path):
    rid = _hand_run(store)
    proc = run_cli("analyze", "categories", rid, "--db", store.path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["overall"]["BG Fools"] == pytest.approx(1 / 7)
    missing = eval_run(store, {"original": [("a/x", 0, 0)]})
    assert_one_line_error(run_cli("analyze", "categories", missing, "--db", store.path), "mixed_rand", "only_bg_t")
    assert_one_line_error(run_cli("analyze", "categories", 999, "--db", store.path), "run 999 not found")


@given(st.lists(st.tuples(*[st.integers(0, 3)] * 4), min_size=1, max_size=40))
def test_categories_partition_every_image(rows):
    y, o, m, b = (np.array(c) for c in zip(*rows))
    cats = categorize(y, o, m, b)
    assert ((cats == 0) == ((o == y) == (m == y))).all()  # BG Irrelevant exactly when full and fg agree
    assert set(cats.tolist()) <= set(range(len(CATEGORIES)))


def test_the_manuals_table_of_categories_is_the_code():
    """docs/concepts/measures.md's table (the paper's Table 3: BG Irrelevant is right on both or
    wrong on both) read row by row and checked against `categorize`, label 0, wrong class c = 1."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "concepts" / "measures.md").read_text()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in doc.splitlines()
            if line.startswith("| ") and line.count("|") == 5 and not line.startswith("| ORIGINAL")]
    assert len(rows) == 6
    pred = {"right": [0], "wrong": [1, 2], "wrong (class c)": [1], "c": [1], "not c": [0, 2], "any": [0, 1]}
    for full, fg, bg, category in rows:
        for f in pred[full]:
            for g in pred[fg]:
                for b in pred[bg]:
                    got = CATEGORIES[int(categorize(np.array([0]), np.array([f]), np.array([g]), np.array([b]))[0])]
                    assert got == category, (full, fg, bg, f, g, b)
