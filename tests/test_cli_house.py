"""The CLI package: cheap help, one-line errors for every bad number, results on stdout only,
and every kind of run recorded in the store."""
import io
import json
import sqlite3
import subprocess
import sys

import pytest

from bgbench import console
from conftest import assert_one_line_error, run_cli

HEAVY = ("torch", "timm", "torchvision")


def test_help_imports_no_torch():
    code = ("import sys\nfrom bgbench.cli import build_parser, COMMANDS\np = build_parser()\n"
            "for c in COMMANDS:\n    p._subparsers._group_actions[0].choices[c].format_help()\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"



def test_a_command_line_builds_its_own_commands_parser_alone(tmp_path):
    """`bgbench runs ...` registers the runs command only (a reader follows one command's module,
    and no other command's code runs); `bgbench --help` and a mistyped command still list them all."""
    code = ("import sys\nfrom bgbench.cli import main, COMMANDS\n"
            f"main(['runs', '--db', {str(tmp_path / 'r.db')!r}])\n"
            "print(sorted(c for c in COMMANDS if 'bgbench.cli.' + c.replace('-', '_') in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['runs']"
    listed = run_cli("--help").stdout
    assert "probe" in listed and "merge-stores" in listed
    assert "did you mean 'probe'" in run_cli("prob").stderr

@pytest.mark.parametrize("argv, needles", [
    (["eval", "--batch-size", "0"], ["--batch-size", "at least 1"]),
    (["eval", "--device", "cuda:7"], ["cuda"]),
    (["challenge", "--batch-size", "0"], ["--batch-size", "at least 1"]),
    (["challenge", "--save-every", "0"], ["--save-every"]),
    (["challenge", "--precision", "fp16"], ["fp16", "GPU"]),
    (["challenge", "--precision", "tf32"], ["tf32", "GPU"]),
    (["eval", "--precision", "tf32"], ["tf32", "GPU"]),
    (["probe", "noise", "--precision", "tf32"], ["tf32", "GPU"]),
])
def test_bad_numbers_for_model_commands_are_one_line_errors(synth_root, tmp_path, argv, needles):
    proc = run_cli(*argv, "--model", "timm:test_resnet", "--data", synth_root, "--quiet", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, *needles)


@pytest.mark.parametrize("argv, needle", [
    (["--epochs", "0"], "--epochs"), (["--batch-size", "0"], "--batch-size"), (["--lr", "0"], "--lr"),
    (["--lr", "-1"], "--lr"), (["--bgswap-p", "1.5"], "--bgswap-p"), (["--mixup-alpha", "-1"], "--mixup-alpha"),
    (["--cutmix-alpha", "-0.1"], "--cutmix-alpha"), (["--swa-start", "1"], "--swa-start"),
    (["--swa-lr", "0"], "--swa-lr"), (["--threads", "0"], "--threads"), (["--freeze"], "--init"),
])
def test_bad_numbers_for_train_are_one_line_errors(synth_root, tmp_path, argv, needle):
    proc = run_cli("train", "--data", synth_root, "--model", "timm:test_resnet", "--out", tmp_path / "o", "--quiet",
                   *argv)
    assert_one_line_error(proc, needle)
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.parametrize("argv, needle", [
    (["--per-class", "0"], "--per-class"), (["--size", "4"], "--size"), (["--bg-correlation", "2"], "--bg-correlation"),
])
def test_bad_numbers_for_synth_are_one_line_errors(tmp_path, argv, needle):
    assert_one_line_error(run_cli("synth", "--out", tmp_path / "s", "--quiet", *argv), needle)


@pytest.mark.parametrize("argv, needle", [
    (["--workers", "0"], "--workers"), (["--grabcut-tries", "0"], "--grabcut-tries"), (["--resize", "0"], "--resize"),
    (["--crop", "300"], "--crop"),
])
def test_bad_numbers_for_build_are_one_line_errors(tmp_path, argv, needle):
    (tmp_path / "imgs" / "a").mkdir(parents=True)
    proc = run_cli("build", "--images", tmp_path / "imgs", "--boxes", tmp_path / "imgs", "--out", tmp_path / "o",
                   "--quiet", *argv)
    assert_one_line_error(proc, needle)


def test_unknown_architecture_hint_names_a_real_command(synth_root, tmp_path):
    proc = run_cli("eval", "--model", "timm:no_such_arch", "--data", synth_root, "--quiet")
    assert_one_line_error(proc, "bgbench models 'timm:*'")
    listing = run_cli("models", "timm:test_res*")  # the hint's command works
    assert listing.returncode == 0 and "timm:test_resnet" in listing.stdout


def test_progress_in_a_non_terminal_prints_a_few_lines_not_frames(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(console, "LOG_EVERY_S", 0.0)  # would print on every update if it drew frames
    clock = iter(range(0, 10_000, 1))
    monkeypatch.setattr(console.time, "time", lambda: float(next(clock)))
    bar = console.progress(enabled=True, total=500, desc="work", unit="img")
    for _ in range(500):
        bar.update(1)
    bar.close()
    text = err.getvalue()
    assert "\r" not in text and "\x1b" not in text  # no redraw frames
    assert all(line.startswith("work: ") for line in text.splitlines())
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    bar = console.progress(enabled=False, total=5, desc="q")
    for _ in range(5):
        bar.update(1)
    bar.close()
    assert quiet.getvalue() == ""


def test_progress_lines_are_rate_limited(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    clock = iter(float(t) for t in range(0, 100_000))  # one second per update
    monkeypatch.setattr(console.time, "time", lambda: next(clock))
    bar = console.progress(enabled=True, total=300, desc="work")
    for _ in range(300):
        bar.update(1)
    bar.close()
    assert 5 <= len(err.getvalue().splitlines()) <= 300 / console.LOG_EVERY_S + 2


def test_train_eval_and_build_runs_are_recorded_and_listed(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("train", "--data", synth_root, "--model", "timm:test_resnet", "--epochs", 1, "--out",
                   tmp_path / "run", "--quiet", "--db", db)
    assert proc.returncode == 0, proc.stderr
    ckpt = tmp_path / "run" / "model.pt"
    proc = run_cli("eval", "--model", f"file:{ckpt}", "--data", synth_root, "--quiet", "--db", db,
                   "--variants", "original")
    assert proc.returncode == 0, proc.stderr
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    train_run, eval_run = con.execute("SELECT * FROM runs ORDER BY id").fetchall()
    assert train_run["kind"] == "train" and train_run["status"] == "done"
    config = json.loads(train_run["config"])
    assert config["recipe"] == "erm" and config["data"] == str(synth_root) and train_run["data_fingerprint"]
    # the evaluated model links back to its training run through the checkpoint's sha256
    assert train_run["checkpoint_sha256"] == eval_run["checkpoint_sha256"]
    assert json.loads(train_run["outputs"])["checkpoint_sha256"] == train_run["checkpoint_sha256"]
    listing = run_cli("runs", "--db", db, "--json")
    assert listing.returncode == 0
    rows = json.loads(listing.stdout)
    assert [(r["id"], r["kind"], r["status"]) for r in rows] == [(1, "train", "done"), (2, "eval", "done")]
    table = run_cli("runs", "--db", db, "--kind", "eval")
    kinds = [line.split()[1] for line in table.stdout.splitlines()[1:]]
    assert kinds == ["eval"] and "accuracy[original]=" in table.stdout


def test_every_shard_flag_says_it_counts_from_zero():
    """`--shard K/N` is 0-based wherever it is a flag, and its help says so in words, not only by
    an example (issue 58)."""
    import argparse
    from bgbench.cli import build_parser
    found = []
    for sub in build_parser()._subparsers._group_actions:
        for name, parser in sub.choices.items():
            for action in parser._actions:
                if "--shard" in action.option_strings:
                    found.append(name)
                    assert "from 0" in action.help and "0 <= K < N" in action.help, (name, action.help)
    assert {"study", "build"} <= set(found), found
