"""Worst-group accuracy: per-group accuracy, Wilson intervals and the worst group against a table
worked by hand, and a stored eval run's groups against the manifest and predictions read here with
the csv module and the store's rows (not bgbench's readers)."""
import csv
import json

import pytest

from bgbench.measures.groups.summary import group_accuracy
from conftest import assert_one_line_error, run_cli


def test_groups_by_hand():
    # (class, background): a/a 3 of 3 right, a/b 1 of 4, b/a 0 of 1, b/b 2 of 2
    groups = [("a", "a")] * 3 + [("a", "b")] * 4 + [("b", "a")] + [("b", "b")] * 2
    correct = [1, 1, 1] + [1, 0, 0, 0] + [0] + [1, 1]
    r = group_accuracy(correct, groups, min_images=2)
    acc = {(g["class"], g["background"]): (g["correct"], g["n"]) for g in r.groups}
    assert acc == {("a", "a"): (3, 3), ("a", "b"): (1, 4), ("b", "a"): (0, 1), ("b", "b"): (2, 2)}
    assert (r.worst["class"], r.worst["background"]) == ("a", "b")  # b/a is lower but has 1 image < 2
    assert r.worst["acc"] == 0.25 and r.mean == pytest.approx((1 + 0.25 + 0 + 1) / 4)
    assert r.overall["acc"] == pytest.approx(6 / 10)
    # Wilson at 1 of 4, z = 1.959964: centre (p + z²/2n)/(1 + z²/n), half-width z√(p(1-p)/n + z²/4n²)/(1 + z²/n)
    z, n, p = 1.959963984540054, 4, 0.25
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (
        1 + z * z / n)
    assert (r.worst["lo"], r.worst["hi"]) == pytest.approx((centre - half, centre + half))
    assert group_accuracy(correct, groups, min_images=5).worst is None


def test_a_stored_eval_run_is_grouped_by_its_manifest(synth_root, tmp_path):
    db = tmp_path / "r.db"
    ev = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--db", db, "--json", "--quiet",
                 "--variants", "original", "mixed_rand")
    assert ev.returncode == 0, ev.stderr
    run_id = json.loads(ev.stdout)["run_id"]
    proc = run_cli("analyze", "groups", run_id, "--min-images", 1, "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    with open(synth_root / "manifest.csv", newline="") as f:  # the background of each mixed_rand image, read here
        bg = {r["image"]: r["bg_class"] for r in csv.DictReader(f) if r["folder"] == "mixed_rand"
              and r["split"] == "val"}
    from bgbench.store import Store
    with Store(db) as store:
        rows = store.predictions(run_id, "mixed_rand")
    classes = sorted(p.name for p in (synth_root / "original" / "val").iterdir())
    expected = {}
    for r in rows:
        key = (classes[r["label"]], bg[r["image_id"]])
        k, n = expected.get(key, (0, 0))
        expected[key] = (k + int(r["pred"] == r["label"]), n + 1)
    assert {(g["class"], g["background"]): (g["correct"], g["n"]) for g in doc["groups"]} == expected
    worst = min(expected.items(), key=lambda kv: (kv[1][0] / kv[1][1], kv[0]))
    assert (doc["worst_group"]["class"], doc["worst_group"]["background"]) == worst[0]
    assert "worst group:" in run_cli("analyze", "groups", run_id, "--min-images", 1, "--db", db).stdout


def test_groups_need_a_mixed_variant_and_a_manifest(synth_root, tmp_path):
    import shutil
    data = tmp_path / "s9"
    shutil.copytree(synth_root, data)
    db = tmp_path / "r.db"
    ev = run_cli("eval", "--model", "timm:test_resnet", "--data", data, "--db", db, "--json", "--quiet",
                 "--variants", "original", "mixed_rand")
    run_id = json.loads(ev.stdout)["run_id"]
    (data / "manifest.csv").unlink()
    assert_one_line_error(run_cli("analyze", "groups", run_id, "--db", db), "manifest.csv", "--data")
    only = run_cli("eval", "--model", "timm:test_resnet", "--data", data, "--db", db, "--json", "--quiet",
                   "--variants", "original")
    assert_one_line_error(run_cli("analyze", "groups", json.loads(only.stdout)["run_id"], "--db", db), "mixed_rand")
