"""The Backgrounds Challenge engine: exact verdicts, invariance, full-matrix analyses, resume, torchrun."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bgbench.data.images import read_mask
from bgbench.data.in9 import discover
from bgbench.data.images import decode_image
from bgbench.measures.challenge.engine import ChallengeEngine
from bgbench.measures.challenge.matrix import (attack_success_rates, class_fool_rates, top_backgrounds,
                                              verdicts_from_matrix)
from bgbench.models import create_model
from conftest import assert_one_line_error, run_cli

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(scope="module")
def tensors(synth_root):
    layout = discover(synth_root)
    pairs = layout.foregrounds()
    fg = torch.from_numpy(np.stack([decode_image(it.path) for it, _ in pairs]))
    masks = torch.from_numpy(np.stack([read_mask(m) for _, m in pairs]))
    labels = np.array([it.label for it, _ in pairs])
    bg_items = layout.items("only_bg_t")
    bg = torch.from_numpy(np.stack([decode_image(it.path) for it in bg_items]))
    bg_labels = np.array([it.label for it in bg_items])
    return fg, masks, labels, bg, bg_labels


def reference_matrix(model, fg, masks, bg):
    """Upstream's `challenge_eval.py` loop, one foreground at a time, in float: bg * (1 - m) + m * fg,
    normalized by the model's mean and std, the network's argmax (these models have the dataset's
    9 classes as outputs). Nothing of bgbench's but the network and its recorded mean/std."""
    mean = torch.tensor(model.spec.mean).view(1, 3, 1, 1)
    std = torch.tensor(model.spec.std).view(1, 3, 1, 1)
    rows = []
    with torch.inference_mode():
        for i in range(len(fg)):
            img = fg[i].permute(2, 0, 1).float() / 255
            m = masks[i].float()[None].expand(3, -1, -1)
            x = bg.permute(0, 3, 1, 2).float() / 255 * (1 - m) + m * img
            rows.append(model.net((x - mean) / std).argmax(dim=1).numpy())
    return np.stack(rows)


def test_verdicts_equal_the_exhaustive_reference_for_any_batch_size_and_order(model_ckpt, tensors):
    fg, masks, labels, bg, bg_labels = tensors
    model = create_model(f"file:{model_ckpt}")
    ref = reference_matrix(model, fg, masks, bg)
    expected = (ref != labels[:, None]).any(axis=1)
    assert expected.any()
    seen = []
    for batch_size, order in ((1, None), (7, "reverse"), (64, "shuffle"), (1000, None)):
        idx = list(range(len(fg)))
        if order == "reverse":
            idx = idx[::-1]
        elif order == "shuffle":
            idx = list(np.random.default_rng(0).permutation(idx))
        engine = ChallengeEngine(model, bg, torch.from_numpy(bg_labels), batch_size=batch_size)
        results = engine.verdicts(fg, masks, labels, idx, progress=False)
        got = np.zeros(len(fg), bool)
        for r in results:
            got[r.index] = r.fooled
            if r.fooled:  # the reported fooling background really fools
                assert ref[r.index, r.fooling_bg] == r.fooling_pred != labels[r.index]
            else:
                assert r.pairs == len(bg)
        assert (got == expected).all(), (batch_size, order)
        seen.append(engine.stats.pairs)
    assert min(seen) < len(fg) * len(bg)  # early stopping did happen


def test_full_rows_equal_the_reference_matrix(model_ckpt, tensors):
    fg, masks, labels, bg, bg_labels = tensors
    model = create_model(f"file:{model_ckpt}")
    ref = reference_matrix(model, fg[:5], masks[:5], bg)
    engine = ChallengeEngine(model, bg, torch.from_numpy(bg_labels), batch_size=16)
    rows = np.stack([r.row for r in engine.full_rows(fg, masks, labels, range(5))])
    assert (rows == np.where(ref < 0, 255, ref)).all()


def test_matrix_analyses_by_hand():
    # 4 foregrounds (classes 0,0,1,2) x 3 backgrounds (classes 0,1,2)
    m = np.array([[0, 1, 0],
                  [0, 0, 2],
                  [0, 1, 2],
                  [2, 255, 2]], np.uint8)
    fg = np.array([0, 0, 1, 2])
    bg = np.array([0, 1, 2])
    assert verdicts_from_matrix(m, fg).tolist() == [True, True, True, True]
    asr = attack_success_rates(m, fg, bg)
    # bg0 (class 0): other-class fgs are rows 2,3 -> predicted 0 in row 2 only
    # bg1 (class 1): rows 0,1,3 -> predicted 1 in row 0 only; bg2 (class 2): rows 0,1,2 -> 2 in rows 1,2
    assert asr.tolist() == pytest.approx([1 / 2, 1 / 3, 2 / 3])
    rates = class_fool_rates(m, fg, bg, 3)
    assert rates.tolist() == pytest.approx([1 / 2, 1 / 3, 2 / 3])
    assert top_backgrounds(asr, bg, k=5) == {0: [0], 1: [1], 2: [2]}


def test_cli_challenge_full_writes_figures_and_store(model_ckpt, synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("challenge", "--model", f"file:{model_ckpt}", "--data", synth_root, "--db", db, "--quiet",
                   "--full", "--out", tmp_path / "figs")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "figs" / "top5_backgrounds.png").stat().st_size > 1000
    assert (tmp_path / "figs" / "asr_histogram.png").stat().st_size > 1000
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM challenge_fg").fetchone()[0] == 36
    assert con.execute("SELECT COUNT(*) FROM challenge_bg").fetchone()[0] == 36
    full_fooled = con.execute("SELECT SUM(fooled) FROM challenge_fg").fetchone()[0]
    proc = run_cli("challenge", "--model", f"file:{model_ckpt}", "--data", synth_root, "--db", db, "--quiet",
                   "--batch-size", "5")
    assert proc.returncode == 0
    fast_fooled = con.execute("SELECT SUM(fooled) FROM challenge_fg WHERE run_id=2").fetchone()[0]
    assert fast_fooled == full_fooled
    assert "challenge accuracy" in proc.stdout


def test_missing_mask_and_size_mismatch_are_clear_errors(model_ckpt, synth_copy):
    victim = sorted((synth_copy / "fg_mask" / "val" / "01_square").iterdir())[0]
    victim.unlink()
    proc = run_cli("challenge", "--model", f"file:{model_ckpt}", "--data", synth_copy, "--db",
                   synth_copy / "r.db", "--quiet")
    assert_one_line_error(proc, "no mask")
    np.save(victim, np.zeros((32, 32), np.uint8))
    bad = sorted((synth_copy / "only_bg_t" / "val" / "02_triangle").iterdir())[0]
    from PIL import Image
    Image.new("RGB", (40, 32)).save(bad)
    proc = run_cli("challenge", "--model", f"file:{model_ckpt}", "--data", synth_copy, "--db",
                   synth_copy / "r.db", "--quiet")
    assert_one_line_error(proc, "one size")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _results(db, run_id=None):
    con = sqlite3.connect(db)
    q = "SELECT image_id, label, clean_pred, fooled FROM challenge_fg"
    rows = con.execute(q + (" WHERE run_id=?" if run_id else "") + " ORDER BY image_id",
                       (run_id,) if run_id else ()).fetchall()
    con.close()
    return rows


def _start_and_kill(args, db, at_least: int) -> int:
    """Start the challenge in a subprocess, SIGKILL it once `at_least` verdicts are stored."""
    proc = subprocess.Popen(args + ["--db", str(db)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
        try:
            if len(_results(db)) >= at_least:
                break
        except sqlite3.Error:
            continue
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return len(_results(db))


def test_resume_after_sigkills_gives_the_uninterrupted_result_and_clean_json(model_ckpt, synth_root, tmp_path):
    args = [sys.executable, "-m", "bgbench", "challenge", "--model", f"file:{model_ckpt}", "--data",
            str(synth_root), "--quiet", "--full", "--batch-size", "1", "--save-every", "1", "--out",
            str(tmp_path / "f")]
    killed_db = tmp_path / "killed.db"
    first = _start_and_kill(args, killed_db, 3)
    second = _start_and_kill(args, killed_db, first + 3)
    assert 3 <= first < second < 36
    # The resumed and the clean run go in-process: the kills above are what needs a real process.
    resumed = run_cli(*args[3:], "--db", killed_db, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming challenge run 1" in resumed.stderr
    document = json.loads(resumed.stdout)  # stdout is one JSON document and nothing else
    assert document["run_id"] == 1 and document["total"] == 36
    clean_run = run_cli(*args[3:], "--db", tmp_path / "clean.db")
    assert clean_run.returncode == 0, clean_run.stderr
    assert _results(killed_db) == _results(tmp_path / "clean.db")
    assert len(_results(killed_db)) == 36
    assert document["fooled"] == sum(r[3] for r in _results(tmp_path / "clean.db"))


def test_a_run_never_resumes_under_another_normalization(model_ckpt, synth_root, tmp_path):
    """Verdicts computed under two normalizations must never merge into one run."""
    from bgbench import recording
    from bgbench.measures.challenge.runner import ChallengeConfig
    from bgbench.runs import run_challenge
    from bgbench.store import Store
    layout = discover(synth_root, variants=["original", "only_bg_t"])
    cfg = ChallengeConfig(batch_size=16)
    with Store(tmp_path / "r.db") as store:
        in9 = create_model(f"file:{model_ckpt}", norm="in9")
        in9.meet(layout)  # as the challenge does before it opens its run
        stale = recording.start(store, recording.Provenance.of("challenge", cfg.identity(), model=in9, layout=layout))
        store.add_challenge_results(stale, [(layout.items("original")[0].image_id, 0, 0, 0, 1, None, None)])
        other = create_model(f"file:{model_ckpt}", norm="imagenet")
        report = run_challenge(other, synth_root, store, cfg, progress=False)
        assert report.run_id != stale
        same = run_challenge(in9, synth_root, store, cfg, progress=False)
        assert same.run_id == stale  # the very same job does resume


def test_random_init_is_seeded_so_a_model_string_names_one_model():
    a, b = create_model("timm:test_resnet"), create_model("timm:test_resnet")
    assert a.spec.to_dict() == b.spec.to_dict() and a.spec.extra["init_seed"] == 0
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), k


def test_torchrun_two_processes_match_one(model_ckpt, synth_root, tmp_path):
    base = ["challenge", "--model", f"file:{model_ckpt}", "--data", str(synth_root), "--quiet", "--batch-size", "8"]
    one = run_cli(*base, "--db", tmp_path / "one.db")  # the one-process reference needs no fresh interpreter
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          "--master-port", "29517", "-m", "bgbench", *base, "--db", str(tmp_path / "two.db")],
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    assert _results(tmp_path / "one.db") == _results(tmp_path / "two.db")
    assert two.stdout.count("challenge accuracy") == 1  # only rank 0 reports


def test_bf16_verified_equals_fp32_on_a_trained_model(model_ckpt, tensors):
    fg, masks, labels, bg, bg_labels = tensors
    model = create_model(f"file:{model_ckpt}")
    out = {}
    for precision in ("fp32", "bf16-verified"):
        engine = ChallengeEngine(model, bg, torch.from_numpy(bg_labels), batch_size=16, precision=precision)
        rows = np.stack([r.row for r in engine.full_rows(fg, masks, labels, range(12))])
        fresh = ChallengeEngine(model, bg, torch.from_numpy(bg_labels), batch_size=16, precision=precision)
        verdicts = {r.index: (r.fooled, r.fooling_bg) for r in fresh.verdicts(fg, masks, labels, range(len(fg)),
                                                                              progress=False)}
        out[precision] = rows, verdicts, engine
    assert (out["fp32"][0] == out["bf16-verified"][0]).all()  # every prediction, not only verdicts
    assert out["fp32"][1] == out["bf16-verified"][1]
    st = out["bf16-verified"][2].verifier.stats
    assert st.composites == out["fp32"][0].size and st.calibration > 0 and st.delta >= st.max_spread > 0


def test_cli_bf16_verified_and_sample(model_ckpt, synth_root, tmp_path):
    import json
    base = ["challenge", "--model", f"file:{model_ckpt}", "--data", synth_root, "--quiet", "--batch-size", "16"]
    ref = run_cli(*base, "--db", tmp_path / "a.db", "--json")
    ver = run_cli(*base, "--db", tmp_path / "b.db", "--json", "--precision", "bf16-verified", "--verify-safety", "6")
    assert ref.returncode == 0 and ver.returncode == 0, ver.stderr
    assert _results(tmp_path / "a.db") == _results(tmp_path / "b.db")
    out = json.loads(ver.stdout)
    assert out["precision"]["safety"] == 6 and out["precision"]["composites"] > 0 and out["estimate"] is False
    assert json.loads(ref.stdout)["precision"] is None
    con = sqlite3.connect(tmp_path / "b.db")
    stored = dict(con.execute("SELECT name, value FROM metrics WHERE name LIKE 'bf16_%'").fetchall())
    assert stored["bf16_safety"] == 6 and stored["bf16_rechecked"] == out["precision"]["rechecked"]
    assert stored["bf16_audited"] == out["precision"]["audited"]
    assert stored["bf16_delta"] == out["precision"]["delta"]
    assert out["numerics"]["fp32"].startswith("strict") and "user_fp32_settings" in out["numerics"]
    table = run_cli(*base, "--db", tmp_path / "c.db", "--precision", "bf16-verified")
    assert "fooled verdicts are exact" in table.stdout and "as good as the audits" in table.stdout
    sampled = run_cli(*base, "--db", tmp_path / "d.db", "--sample", "18", "--seed", "3", "--json")
    assert sampled.returncode == 0, sampled.stderr
    s = json.loads(sampled.stdout)
    assert s["estimate"] is True and s["sample"]["n"] == 18 and s["sample"]["seed"] == 3 and s["total"] == 18
    assert [r["n"] for r in s["per_class"]] == [2] * 9
    printed = run_cli(*base, "--db", tmp_path / "d.db", "--sample", "27", "--seed", "3")
    assert "ESTIMATE from a seeded sample of 27 of 36" in printed.stdout and "resuming challenge run 1" in printed.stderr
