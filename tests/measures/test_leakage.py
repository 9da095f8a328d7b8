"""Box leakage (paper §5) against tables worked out by hand."""
import json
import pytest
from bgbench.measures.leakage.summary import leakage
from bgbench.errors import BgbenchError
from helpers.run_tables import eval_run, store  # noqa: F401 (fixture)
from conftest import assert_one_line_error, run_cli


def test_leakage_by_hand(store):
    table = {"only_bg_b": [(f"a/{i}", i % 3, 0) for i in range(12)],  # 4 of 12 right (label 0)
             "only_bg_t": [(f"a/{i}", i % 3, i % 3) for i in range(12)],  # all right
             "no_fg": [(f"a/{i}", i % 3, i % 3 if i < 9 else 0) for i in range(12)],  # 9 + 1 of 12 right
             "original": [(f"a/{i}", i % 3, i % 3) for i in range(12)]}
    rid = eval_run(store, table)
    d = leakage(store, rid).to_dict()
    assert d["chance"] == pytest.approx(1 / 3)
    # leakage is the paper's two background-only variants, and only those (§5)
    assert set(d["accuracy"]) == set(d["above_chance"]) == {"only_bg_b", "only_bg_t"}
    assert d["above_chance"]["only_bg_b"]["value"] == pytest.approx(0.0)
    assert d["above_chance"]["only_bg_t"]["value"] == pytest.approx(2 / 3)
    assert d["above_chance"]["only_bg_t"]["lo"] > 0  # an interval that excludes chance
    # NO-FG keeps the silhouette: reported apart, under its own name
    s = d["silhouette_signal"]
    assert s["variant"] == "no_fg" and s["name"] == "silhouette signal (no_fg)"
    assert s["accuracy"]["value"] == pytest.approx(10 / 12) and s["above_chance"]["value"] == pytest.approx(10 / 12 - 1 / 3)
    proc = run_cli("analyze", "leakage", rid, "--db", store.path)
    assert proc.returncode == 0, proc.stderr
    leak, _, shape = proc.stdout.partition("silhouette signal (no_fg)")
    assert "only_bg_t" in leak and "no_fg" not in leak and "+50.0%" in shape  # 10/12 - 1/3 = 50 points
    doc = json.loads(run_cli("analyze", "leakage", rid, "--db", store.path, "--json").stdout)
    assert "no_fg" not in doc["above_chance"] and doc["silhouette_signal"]["above_chance"]["value"] == pytest.approx(0.5)


def test_leakage_needs_a_background_only_variant(store):
    rid = eval_run(store, {"no_fg": [("a/1", 0, 0)], "original": [("a/1", 0, 0)]})
    with pytest.raises(BgbenchError, match="only_bg_b or only_bg_t"):
        leakage(store, rid)
    assert_one_line_error(run_cli("analyze", "leakage", rid, "--db", store.path), "only_bg_b or only_bg_t")
