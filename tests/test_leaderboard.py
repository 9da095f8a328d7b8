"""The leaderboard: measured rows ranked within one dataset (data fingerprint), published rows
beside IN-9 runs only."""
import csv
import io
import json

from bgbench.classes import IN9_FOLDERS
from bgbench.reporting.leaderboard import PUBLISHED, leaderboard, render
from bgbench.store import Store
from conftest import run_cli

SYNTH = ["00_circle", "01_square"]


def _add(store, model, sha, challenge=None, clean=None, accs=None, gap=None, root="/data", fp="fp-in9",
         classes=IN9_FOLDERS):
    spec = {"checkpoint_sha256": sha}
    config = {"x": 1, "classes": list(classes)}
    if accs is not None:
        rid = store.start_run("eval", config, model=model, spec=spec, data_root=root, data_fingerprint=fp)
        for v, a in accs.items():
            store.add_metric(rid, "accuracy", a, variant=v)
        store.add_metric(rid, "bg_gap", gap)
        store.finish_run(rid)
    if challenge is not None:
        rid = store.start_run("challenge", config, model=model, spec=spec, data_root=root, data_fingerprint=fp)
        store.add_metric(rid, "challenge_accuracy", challenge)
        store.add_metric(rid, "clean_accuracy", clean)
        store.finish_run(rid)


def test_ranking_provenance_and_reported_rows(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a", "a" * 64, challenge=0.30, clean=0.9,
             accs={"original": 0.9, "mixed_same": 0.8, "mixed_rand": 0.7}, gap=0.1)
        _add(store, "timm:b", "b" * 64, challenge=0.05, clean=0.95)
        unfinished = store.start_run("challenge", {}, model="timm:c", spec={"checkpoint_sha256": "c"},
                                     data_root="/data", data_fingerprint="fp-in9")
        store.add_metric(unfinished, "challenge_accuracy", 0.99)
        rows = leaderboard(store)
    models = [r["model"] for r in rows]
    assert "timm:c" not in models  # unfinished runs never rank
    assert models.index("timm:a") < models.index("ResNet-50") < models.index("ResNet-50 (IN-9L)") < models.index("timm:b")
    a = rows[models.index("timm:a")]
    assert a["source"] == "measured" and a["checkpoint_sha256"] == "a" * 64 and a["version"]
    assert a["mixed_rand"] == 0.7 and a["bg_gap"] == 0.1 and a["challenge"] == 0.3  # eval and challenge joined
    r50 = rows[models.index("ResNet-50")]
    assert r50["source"] == "reported" and r50["challenge"] == 0.223 and r50["clean"] == 0.956
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    vgg = rows[models.index("VGG16-BN")]
    assert vgg["challenge"] is None and vgg["bg_gap"] == 0.102


def test_datasets_are_ranked_apart_and_published_rows_join_in9_only(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:in9", "a" * 64, challenge=0.20, clean=0.9)
        _add(store, "timm:synth", "b" * 64, challenge=0.50, clean=0.9, root="/synth", fp="fp-s", classes=SYNTH)
        _add(store, "timm:synth-copy", "c" * 64, challenge=0.40, clean=0.9, root="/elsewhere/synth", fp="fp-s",
             classes=SYNTH)
        rows = leaderboard(store)
    by_dataset = {}
    for r in rows:
        by_dataset.setdefault(r["dataset"], []).append(r)
    synth = next(v for k, v in by_dataset.items() if "fp-s" in k)
    assert [r["model"] for r in synth] == ["timm:synth", "timm:synth-copy"]  # one dataset despite two paths
    assert [r["rank"] for r in synth] == [1, 2] and all(r["source"] == "measured" for r in synth)
    in9 = next(v for k, v in by_dataset.items() if "fp-in9" in k)
    assert [r["model"] for r in in9][:2] == ["ResNet-50", "timm:in9"]
    assert PUBLISHED not in by_dataset  # the published rows sit beside the IN-9 run, not apart


def test_published_rows_stand_alone_without_an_in9_run(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:synth", "b" * 64, challenge=0.50, clean=0.9, root="/synth", fp="fp-s", classes=SYNTH)
        rows = leaderboard(store)
    assert {r["dataset"] for r in rows if r["source"] == "reported"} == {PUBLISHED}
    assert next(r for r in rows if r["model"] == "timm:synth")["rank"] == 1


def test_formats(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a|pipe", "a" * 64, challenge=0.3, clean=0.9)
        rows = leaderboard(store)
    assert json.loads(render(rows, "json"))[0]["model"] == "timm:a|pipe"
    parsed = list(csv.DictReader(io.StringIO(render(rows, "csv"))))
    assert len(parsed) == len(rows)
    md = render(rows, "md")
    body = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| rank")]
    assert "timm:a\\|pipe" in md and len(body) == len(rows)
    assert "30.0%" in render(rows, "table")


def test_cli_leaderboard_only_measured(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a", "a" * 64, challenge=0.3, clean=0.9)
    proc = run_cli("leaderboard", "--db", tmp_path / "r.db", "--no-reported", "--format", "json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert [r["model"] for r in rows] == ["timm:a"]
