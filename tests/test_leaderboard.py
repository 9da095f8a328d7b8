"""The leaderboard: measured rows from the store, ranked by challenge accuracy, reported rows apart."""
import csv
import io
import json

from bgbench.leaderboard import leaderboard, render
from bgbench.store import Store
from conftest import run_cli


def _add(store, model, sha, challenge=None, clean=None, accs=None, gap=None, root="/data"):
    spec = {"checkpoint_sha256": sha}
    if accs is not None:
        rid = store.start_run("eval", model, spec, {"x": 1}, data_root=root, data_fingerprint="fp-eval")
        for v, a in accs.items():
            store.add_metric(rid, "accuracy", a, variant=v)
        store.add_metric(rid, "bg_gap", gap)
        store.finish_run(rid)
    if challenge is not None:
        rid = store.start_run("challenge", model, spec, {"x": 1}, data_root=root, data_fingerprint="fp-ch")
        store.add_metric(rid, "challenge_accuracy", challenge)
        store.add_metric(rid, "clean_accuracy", clean)
        store.finish_run(rid)


def test_ranking_provenance_and_reported_rows(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a", "a" * 64, challenge=0.30, clean=0.9,
             accs={"original": 0.9, "mixed_same": 0.8, "mixed_rand": 0.7}, gap=0.1)
        _add(store, "timm:b", "b" * 64, challenge=0.05, clean=0.95)
        unfinished = store.start_run("challenge", "timm:c", {"checkpoint_sha256": "c"}, {}, data_root="/data")
        store.add_metric(unfinished, "challenge_accuracy", 0.99)
        rows = leaderboard(store)
    models = [r["model"] for r in rows]
    assert "timm:c" not in models  # unfinished runs never rank
    assert models.index("timm:a") < models.index("ResNet-50") < models.index("ResNet-50 (IN-9L)") < models.index("timm:b")
    a = rows[models.index("timm:a")]
    assert a["source"] == "measured" and a["checkpoint_sha256"] == "a" * 64 and a["version"]
    assert a["mixed_rand"] == 0.7 and a["bg_gap"] == 0.1 and a["challenge"] == 0.3
    r50 = rows[models.index("ResNet-50")]
    assert r50["source"] == "reported" and r50["challenge"] == 0.223 and r50["clean"] == 0.956
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    vgg = rows[models.index("VGG16-BN")]
    assert vgg["challenge"] is None and vgg["bg_gap"] == 0.102


def test_formats(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a|pipe", "a" * 64, challenge=0.3, clean=0.9)
        rows = leaderboard(store)
    assert json.loads(render(rows, "json"))[0]["model"] == "timm:a|pipe"
    parsed = list(csv.DictReader(io.StringIO(render(rows, "csv"))))
    assert len(parsed) == len(rows)
    md = render(rows, "md")
    assert "timm:a\\|pipe" in md and md.count("\n") == len(rows) + 1
    assert "30.0%" in render(rows, "table")


def test_cli_leaderboard_only_measured(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a", "a" * 64, challenge=0.3, clean=0.9)
    proc = run_cli("leaderboard", "--db", tmp_path / "r.db", "--no-reported", "--format", "json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert [r["model"] for r in rows] == ["timm:a"]
