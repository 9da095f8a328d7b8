"""The command line at its edges: strict JSON, closed pipes, one-line errors, stores that reads
never create, status on stderr, finished runs, model names with their weights, class-name
mismatches, and the defects of issue 16 item 9."""
import hashlib
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bgbench.cli import build_parser
from conftest import run_cli
from test_data_errors import assert_one_line_error
from test_readme import leaf_commands, option_actions, resolve, strict_json

MODEL = "timm:test_resnet"


def hand_wilson_halfwidth(k: int, n: int, z: float = 1.959963984540054) -> float:
    """Half the width of the 95% Wilson interval, written out here (the test's own oracle)."""
    p = k / n
    return z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _runs(db):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    return con.execute("SELECT * FROM runs ORDER BY id").fetchall()


# --- strict JSON, tables, closed pipes ------------------------------------------------------------

def test_a_class_without_sampled_foregrounds_is_null_in_json_and_a_dash_in_the_table(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("challenge", "--model", MODEL, "--data", synth_root, "--sample", 6, "--seed", 5, "--json",
                   "--quiet", "--db", db)
    assert proc.returncode == 0, proc.stderr
    doc = strict_json(proc.stdout)  # NaN would raise here
    empty = [row for row in doc["per_class"] if row["n"] == 0]
    assert empty and all(row["clean"] is None and row["challenge"] is None for row in empty)
    table = run_cli("challenge", "--model", MODEL, "--data", synth_root, "--sample", 6, "--seed", 5, "--quiet",
                    "--db", db).stdout
    assert "nan" not in table.lower()
    lines = [ln for ln in table.splitlines() if ln.startswith(empty[0]["class"])]
    assert lines and lines[0].split()[1:] == ["0", "–", "–"]


def _closed_pipe_stdout():
    r, w = os.pipe()
    os.close(r)  # the reader is gone before bgbench writes a byte
    return w


@pytest.mark.parametrize("argv", [["leaderboard", "--format", "csv"], ["--help"]])
def test_a_closed_pipe_ends_the_command_quietly(tmp_path, argv):
    from bgbench.store import Store
    Store(tmp_path / "r.db").close()
    w = _closed_pipe_stdout()
    try:
        proc = subprocess.run([sys.executable, "-m", "bgbench", *argv, *(["--db", str(tmp_path / "r.db")]
                                                                          if argv[0] != "--help" else [])],
                              stdout=w, stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        os.close(w)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stderr == ""


# --- one-line errors ----------------------------------------------------------------------------------

def test_a_checkpoint_that_needs_unpickling_is_refused_in_one_line_without_escape_codes(synth_root, tmp_path):
    import torch
    torch.save({"net": torch.nn.Linear(2, 2)}, tmp_path / "whole.pt")
    proc = run_cli("eval", "--model", MODEL, "--checkpoint", tmp_path / "whole.pt", "--data", synth_root, "--quiet",
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--trust-checkpoint", "torch.nn.modules.linear.Linear")
    assert "\x1b" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_missing_store_named_by_the_environment_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("BGBENCH_DB", str(tmp_path / "nowhere.db"))
    proc = run_cli("report", "--out", tmp_path / "rep", "--quiet")
    assert_one_line_error(proc, "$BGBENCH_DB", "nowhere.db")
    assert "--db" not in proc.stderr


@pytest.mark.parametrize("argv", [["analyze", "categories", "1"], ["analyze", "boxsize", "1"],
                                  ["analyze", "leakage", "1"], ["analyze", "edits", "1"], ["compare", "1", "2"],
                                  ["runs"], ["leaderboard"], ["report", "--quiet"]])
def test_commands_that_only_read_never_create_a_store(tmp_path, argv):
    db = tmp_path / "typo.db"
    proc = run_cli(*argv, "--db", db)
    assert_one_line_error(proc, "--db", "no results store", str(db))
    assert not db.exists() and not list(tmp_path.iterdir())


def test_messages_use_the_right_article(tmp_path):
    from bgbench.store import Store
    with Store(tmp_path / "r.db") as store:
        store.finish_run(store.start_run("challenge", {}))
    proc = run_cli("analyze", "categories", "1", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "run 1 is a challenge run; this needs an eval run")


# --- status on stderr, finished runs, headlines --------------------------------------------------

def test_where_a_run_was_stored_is_status_on_stderr(synth_root, tmp_path):
    proc = run_cli("eval", "--model", MODEL, "--data", synth_root, "--variants", "original", "--quiet", "--db",
                   tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr
    assert "stored in" not in proc.stdout and f"run 1 stored in {tmp_path / 'r.db'}" in proc.stderr


def test_rerunning_a_finished_training_run_trains_and_records_nothing_new(synth_root, tmp_path):
    db, out = tmp_path / "r.db", tmp_path / "run"
    argv = ("train", "--data", synth_root, "--model", MODEL, "--epochs", 1, "--out", out, "--quiet", "--db", db)
    assert run_cli(*argv).returncode == 0
    digest, mtime = sha256(out / "model.pt"), (out / "model.pt").stat().st_mtime_ns
    again = run_cli(*argv)
    assert again.returncode == 0, again.stderr
    assert "already finished (epoch 1/1)" in again.stderr and "resuming" not in again.stderr
    assert [r["kind"] for r in _runs(db)] == ["train"]  # nothing new recorded
    assert sha256(out / "model.pt") == digest and (out / "model.pt").stat().st_mtime_ns == mtime


def test_every_probe_run_has_its_headline_in_the_listing(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("probe", "noise", "--model", MODEL, "--data", synth_root, "--levels", 0.25, "--trials", 1, "--quiet",
                   "--db", db)
    assert proc.returncode == 0, proc.stderr
    rfs = sqlite3.connect(db).execute("SELECT value FROM metrics WHERE name='rfs' AND variant=''").fetchone()[0]
    listing = strict_json(run_cli("runs", "--json", "--db", db).stdout)
    assert listing[0]["kind"] == "probe_noise" and listing[0]["result"] == f"rfs={rfs:.3g}"


# --- models named with their weights -------------------------------------------------------------

def test_models_are_named_with_their_weights_in_runs_leaderboard_and_report(synth_root, tmp_path):
    import timm
    import torch
    from test_checkpoints import robustness_checkpoint
    db = tmp_path / "r.db"
    torch.manual_seed(1)
    net = timm.create_model("test_resnet", num_classes=9)
    torch.save(net.state_dict(), tmp_path / "plain.pt")
    robustness_checkpoint(net, tmp_path / "robust.pt")
    for extra in ([], ["--checkpoint", tmp_path / "plain.pt"], ["--checkpoint", tmp_path / "robust.pt"]):
        proc = run_cli("eval", "--model", MODEL, *extra, "--data", synth_root, "--variants", "original", "--quiet",
                       "--db", db)
        assert proc.returncode == 0, proc.stderr
    expected = {f"{MODEL} [random init, seed 0]", f"{MODEL} [sha256 {sha256(tmp_path / 'plain.pt')[:8]}]",
                f"{MODEL} [sha256 {sha256(tmp_path / 'robust.pt')[:8]}]"}
    listing = run_cli("runs", "--db", db).stdout
    assert all(label in listing for label in expected), listing
    board = run_cli("leaderboard", "--no-reported", "--db", db).stdout
    assert all(label in board for label in expected), board
    report = strict_json(run_cli("report", "--out", tmp_path / "rep", "--json", "--quiet", "--db", db).stdout)
    assert set(report["models"]) == expected


def test_a_checkpoint_trained_on_other_class_folders_is_warned_about_and_recorded(synth_root, tmp_path):
    from bgbench.models import create_model
    from bgbench.training.loop import save_checkpoint
    model = create_model(MODEL)
    model.spec.class_names = tuple(sorted(p.name for p in (synth_root / "original" / "val").iterdir()))
    save_checkpoint(model, tmp_path / "m.pt")
    data = tmp_path / "data"
    for folder in ("original", "fg_mask"):
        shutil.copytree(synth_root / folder / "val", data / folder / "val")
        (data / folder / "val" / "08_bar").rename(data / folder / "val" / "08_long bar")
    db = tmp_path / "r.db"
    same = run_cli("eval", "--model", f"file:{tmp_path / 'm.pt'}", "--data", synth_root, "--variants", "original",
                   "--quiet", "--db", db)
    assert same.returncode == 0 and "class folders" not in same.stderr and "vs '" not in same.stderr
    proc = run_cli("eval", "--model", f"file:{tmp_path / 'm.pt'}", "--data", data, "--quiet", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "'08_bar' vs '08_long bar'" in proc.stderr
    configs = [json.loads(r["config"]) for r in _runs(db)]
    assert "class_names_mismatch" not in configs[0]
    assert configs[1]["class_names_mismatch"]["differ"] == [["08_bar", "08_long bar"]]


# --- issue 16 item 9 -------------------------------------------------------------------------------

def test_a_run_records_its_data_as_an_absolute_path_that_works_from_another_folder(synth_root, tmp_path,
                                                                                    monkeypatch):
    db = tmp_path / "r.db"
    monkeypatch.chdir(synth_root.parent)
    proc = run_cli("eval", "--model", MODEL, "--data", synth_root.name, "--variants", "original", "only_bg_t",
                   "--quiet", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert _runs(db)[0]["data_root"] == str(synth_root.resolve())
    monkeypatch.chdir(tmp_path)  # where a folder of that name does not exist
    proc = run_cli("analyze", "boxsize", "1", "--bins", 2, "--json", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert strict_json(proc.stdout)["box_source"]


def test_a_path_that_is_not_utf8_is_refused_before_any_work(synth_root, tmp_path):
    out = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/edit\xff"))
    proc = run_cli("edit", "--data", synth_root, "--out", out, "--levels", "size_full", "--quiet",
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--out", "UTF-8")
    assert not out.exists() and not (tmp_path / "r.db").exists()


def test_a_dataset_file_name_that_is_not_utf8_is_a_one_line_data_error(synth_root, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(synth_root / "original" / "val", data / "original" / "val")
    folder = data / "original" / "val" / "00_circle"
    first = sorted(folder.iterdir())[0]
    os.rename(first, os.fsdecode(os.fsencode(str(folder)) + b"/bad\xff.png"))
    proc = run_cli("eval", "--model", MODEL, "--data", data, "--quiet", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "UTF-8", "00_circle")
    assert not (tmp_path / "r.db").exists()


def test_build_refuses_an_image_name_that_is_not_utf8_before_building(tmp_path):
    from bgbench.data.synthetic import generate
    from test_build import write_synth
    write_synth(tmp_path / "in", generate(1, size=64, seed=0))
    folder = tmp_path / "in" / "images" / "00_circle"
    os.rename(next(folder.iterdir()), os.fsdecode(os.fsencode(str(folder)) + b"/bad\xff.png"))
    proc = run_cli("build", "--images", tmp_path / "in" / "images", "--boxes", tmp_path / "in" / "boxes", "--out",
                   tmp_path / "out", "--no-resize", "--quiet", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--images", "UTF-8", "bad")
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.db").exists()


# --- flags, defaults, help --------------------------------------------------------------------------

def test_a_plugin_can_be_a_path_to_a_py_file(synth_root, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "h5_blank.py").write_text(
        "import numpy as np\nfrom bgbench.edits import register_inpainter\n"
        "@register_inpainter('h5_blank')\ndef blank(image, mask):\n    return np.zeros_like(image)\n")
    proc = run_cli("edit", "--plugin", plugins / "h5_blank.py", "--inpainter", "h5_blank", "--data", synth_root,
                   "--out", tmp_path / "ed", "--levels", "remove", "--quiet", "--db", tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr
    from PIL import Image
    removed = list((tmp_path / "ed" / "remove" / "val").rglob("*.png"))
    assert removed and all(not np.asarray(Image.open(p)).any() for p in removed)  # the plugin's black background
    assert_one_line_error(run_cli("edit", "--plugin", tmp_path / "none.py", "--data", synth_root, "--out",
                                  tmp_path / "ed2", "--quiet"), "--plugin", "no such file")


def test_mapping_on_a_run_of_a_model_with_the_datasets_classes_is_noted_not_refused(synth_root, tmp_path):
    db = tmp_path / "r.db"
    assert run_cli("eval", "--model", MODEL, "--data", synth_root, "--variants", "original", "mixed_rand", "only_bg_t",
                   "--quiet", "--db", db).returncode == 0
    plain = run_cli("analyze", "categories", "1", "--json", "--db", db)
    mapped = run_cli("analyze", "categories", "1", "--mapping", "argmax", "--json", "--db", db)
    assert mapped.returncode == 0, mapped.stderr
    assert "note:" in mapped.stderr and "1000-class" in mapped.stderr
    assert strict_json(mapped.stdout) == strict_json(plain.stdout)


def test_full_stores_its_matrix_with_its_verdicts(synth_root, tmp_path):
    """--full keeps the prediction matrix in the store, a row per foreground beside its verdict
    (nothing beside the store), and each row gives that verdict."""
    db = tmp_path / "r.db"
    proc = run_cli("challenge", "--model", MODEL, "--data", synth_root, "--full", "--json", "--quiet", "--db", db,
                   "--out", tmp_path / "figs")
    assert proc.returncode == 0, proc.stderr
    doc = strict_json(proc.stdout)
    assert not list(tmp_path.glob("challenge_*")) and "matrix" not in doc["full"]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT f.label, f.fooled, r.preds FROM challenge_fg f JOIN challenge_row r USING (run_id, "
                       "image_id) WHERE run_id=? ORDER BY image_id", (doc["run_id"],)).fetchall()
    assert len(rows) == 36 and all(len(preds) == 36 for *_, preds in rows)
    assert [bool((np.frombuffer(p, np.uint8) != label).any()) for label, _, p in rows] == [bool(f) for _, f, _ in rows]


def test_two_full_challenges_with_two_stores_in_one_folder_keep_their_own_matrices(synth_root, tmp_path):
    """Two stores in one folder, each with a --full run numbered 1: each store's matrix, metrics and
    report hijack figure are those of the same run made alone (they once shared `challenge_1.npy`)."""
    def run(folder: Path, db: str, model: str):
        folder.mkdir(exist_ok=True)
        proc = run_cli("challenge", "--model", model, "--data", synth_root, "--full", "--quiet", "--db", folder / db,
                       "--out", folder / f"{db}-figs")
        assert proc.returncode == 0, proc.stderr
        assert run_cli("report", "--db", folder / db, "--out", folder / f"{db}-report", "--quiet").returncode == 0
        from bgbench.store import Store
        with Store(folder / db) as store:
            metrics = sorted((m["name"], m["variant"], m["value"]) for m in store.metrics(1))
            matrix = store.challenge_matrix(1)
        figure = sorted((folder / f"{db}-report").glob("figures/*hijack*.png"))
        return matrix, metrics, [hashlib.sha256(f.read_bytes()).hexdigest() for f in figure]
    shared = tmp_path / "shared"
    together = [run(shared, "a.db", MODEL), run(shared, "b.db", "timm:test_efficientnet")]
    alone = [run(tmp_path / "a", "a.db", MODEL), run(tmp_path / "b", "b.db", "timm:test_efficientnet")]
    for (m, metrics, fig), (m1, metrics1, fig1) in zip(together, alone):
        assert m is not None and (m == m1).all() and metrics == metrics1 and fig and fig == fig1
    assert not (together[0][0] == together[1][0]).all()  # two models: two matrices


def test_halfwidth_can_stop_after_a_small_first_chunk_and_says_when_it_is_not_reached(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("challenge", "--model", MODEL, "--data", synth_root, "--halfwidth", 0.25, "--json", "--quiet",
                   "--db", db)
    assert proc.returncode == 0, proc.stderr
    doc = strict_json(proc.stdout)
    held = [not f for (f,) in sqlite3.connect(db).execute("SELECT fooled FROM challenge_fg")]
    assert len(held) == doc["sample"]["n"] == 16  # of 36: the first chunk is 16 foregrounds
    assert hand_wilson_halfwidth(sum(held), 16) <= 0.25
    assert "note:" not in proc.stderr
    wide = run_cli("challenge", "--model", MODEL, "--data", synth_root, "--halfwidth", 0.01, "--seed", 1, "--quiet",
                   "--db", db)
    assert wide.returncode == 0 and "note: the 95% half-width" in wide.stderr and "36 of 36" in wide.stderr


def test_defaults_are_read_from_the_config_dataclasses(monkeypatch):
    from bgbench.measures.noise.probe import NoiseConfig
    from bgbench.measures.saliency.probe import SaliencyConfig
    from bgbench.edits.pipeline import EditConfig
    from bgbench.measures.challenge.config import ChallengeConfig
    from bgbench.measures.eval.config import EvalConfig
    from bgbench.training.config import TrainConfig
    from bgbench.variants.build import BuildConfig
    from bgbench.variants.preprocess import Preprocess
    from bgbench.variants.synth import SynthConfig
    cases = [(EvalConfig, "batch_size", ["eval", "--model", "m", "--data", "d"]),
             (ChallengeConfig, "save_every", ["challenge", "--model", "m", "--data", "d"]),
             (TrainConfig, "epochs", ["train", "--data", "d", "--out", "o"]),
             (NoiseConfig, "trials", ["probe", "noise", "--model", "m", "--data", "d"]),
             (SaliencyConfig, "examples", ["probe", "saliency", "--model", "m", "--data", "d"]),
             (EditConfig, "workers", ["edit", "--data", "d", "--out", "o"]),
             (BuildConfig, "tries", ["build", "--images", "i", "--boxes", "b", "--out", "o"]),
             (Preprocess, "crop", ["build", "--images", "i", "--boxes", "b", "--out", "o"]),
             (SynthConfig, "per_class", ["synth", "--out", "o"])]
    for config, name, argv in cases:
        monkeypatch.setattr(config.__dataclass_fields__[name], "default", 17)
        args = build_parser().parse_args(argv)
        assert getattr(args, name) == 17, (config.__name__, name)


def test_help_texts_say_what_the_options_do_and_where_the_store_is():
    parser = build_parser()
    silent = []
    for cmd in leaf_commands(parser):
        sub, _, _ = resolve(cmd.split())
        silent += [f"{cmd} {a.option_strings[0]}" for a in sub._actions if a.option_strings and not a.help]
    assert not silent, f"options without help: {silent}"
    demo = option_actions(resolve(["demo"])[0])["--db"].help
    assert "bgbench-demo/results.db" in demo and "~/.bgbench" not in demo
    assert "$BGBENCH_DB" in option_actions(resolve(["build"])[0])["--db"].help
    train = option_actions(resolve(["train"])[0])
    assert "default original" in train["--variant"].help.replace("%(default)s", "original")


def test_edit_takes_the_shared_model_flags_including_norm(synth_root, tmp_path):
    args = build_parser().parse_args(["edit", "--data", "d", "--out", "o", "--model", MODEL, "--norm", "in9"])
    assert args.norm == "in9"
    proc = run_cli("edit", "--data", synth_root, "--out", tmp_path / "e", "--norm", "in9", "--quiet")
    assert_one_line_error(proc, "--model")
    assert not (tmp_path / "e").exists()


def test_a_last_batch_of_one_image_does_not_stop_training(synth_root, tmp_path):
    """54 training images in batches of 53 leave one image over: BatchNorm cannot normalize a batch of
    one in training, so that batch is dropped (it used to end the run with a ValueError traceback)."""
    from bgbench.data.in9 import discover
    assert len(discover(synth_root, variants=["original"], split="train").items("original")) % 53 == 1
    proc = run_cli("train", "--data", synth_root, "--out", tmp_path / "run", "--model", "timm:test_resnet",
                   "--epochs", "1", "--batch-size", "53", "--db", tmp_path / "r.db", "--quiet")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["epoch"] == 1
