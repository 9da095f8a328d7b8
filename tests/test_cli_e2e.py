"""End to end through the CLI on generated data: synth -> train -> eval -> store."""
import json
import sqlite3

import pytest

from conftest import assert_one_line_error, run_cli, run_cli_subprocess


def test_synth_train_eval_store(tmp_path):
    data = tmp_path / "s9"
    for split, n in (("train", 6), ("val", 3)):
        proc = run_cli("synth", "--out", data, "--size", "32", "--per-class", n, "--split", split, "--quiet")
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("train", "--data", data, "--variant", "mixed_rand", "--model", "timm:test_resnet", "--epochs", 1,
                   "--out", tmp_path / "run", "--quiet")
    assert proc.returncode == 0, proc.stderr
    ckpt = tmp_path / "run" / "model.pt"
    assert ckpt.is_file() and (tmp_path / "run" / "config.json").is_file()
    log = [json.loads(line) for line in open(tmp_path / "run" / "log.jsonl")]
    assert log[-1]["epoch"] == 1
    db = tmp_path / "results.db"
    proc = run_cli_subprocess("eval", "--model", f"file:{ckpt}", "--data", data, "--json", "--quiet", "--db", db)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["accuracy"]) == {"original", "only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same",
                                       "mixed_rand", "mixed_next"}
    con = sqlite3.connect(db)
    rows = con.execute("SELECT variant, label, pred FROM predictions WHERE run_id=?", (report["run_id"],)).fetchall()
    assert len(rows) == 8 * 27
    # the stored table reproduces the reported accuracies
    for v, acc in report["accuracy"].items():
        vs = [r for r in rows if r[0] == v]
        assert acc["value"] == pytest.approx(sum(r[1] == r[2] for r in vs) / len(vs))
    same = {r for r in rows if r[0] == "mixed_same"}
    gap = report["bg_gap"]["value"]
    assert gap == pytest.approx(report["accuracy"]["mixed_same"]["value"] - report["accuracy"]["mixed_rand"]["value"])
    assert same
    run = con.execute("SELECT status, checkpoint_sha256, data_fingerprint, version, config FROM runs").fetchone()
    assert run[0] == "done" and len(run[1]) == 64 and run[2] and run[3]
    assert json.loads(run[4])["mapping"] == "argmax"

    proc = run_cli("eval", "--model", f"file:{ckpt}", "--data", data, "--quiet", "--db", db,
                   "--variants", "original", "only_fg")
    assert proc.returncode == 0 and "only_fg" in proc.stdout and "BG-Gap" not in proc.stdout


def test_models_lists_the_zoo():
    proc = run_cli("models")
    assert proc.returncode == 0 and "zoo:efficientnet_lite0" in proc.stdout


def test_1000_class_model_on_non_in9_classes_is_refused(synth_root, tmp_path):
    proc = run_cli_subprocess("eval", "--model", "zoo:efficientnet_lite0", "--data", synth_root, "--quiet", "--db",
                   tmp_path / "r.db")
    assert_one_line_error(proc, "1000-class")


@pytest.mark.slow
def test_demo_shows_the_bg_gap_contrast(tmp_path):
    proc = run_cli_subprocess("demo", "--out", tmp_path / "demo", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    g_orig = summary["models"]["original"]["bg_gap"]
    g_rand = summary["models"]["mixed_rand"]["bg_gap"]
    assert g_orig["lo"] > g_rand["hi"]  # intervals do not overlap
    assert g_orig["value"] > 3 * max(g_rand["value"], 0.01)
    assert (tmp_path / "demo" / "report" / "index.html").is_file() and "report: " in proc.stdout
    m = summary["models"]
    # the analyses tell the same story (paper Table 3, RIVAL10 RFS and saliency)
    assert m["original"]["categories"]["BG Required"] > m["mixed_rand"]["categories"]["BG Required"]
    assert m["original"]["noise"]["rfs_overall"] < m["mixed_rand"]["noise"]["rfs_overall"]
    assert m["original"]["saliency"]["precision"] < m["mixed_rand"]["saliency"]["precision"]
