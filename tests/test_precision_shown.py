"""A reduced-precision run never becomes the published number without a word (issue 58, item 2):
the scorecard, the export, the leaderboard and the report show an exact (fp32) run where the store
has one, say the precision of any other number they show, and show a bf16 run when asked for by id."""
from __future__ import annotations

import csv
import json

import pytest

from conftest import run_cli

COMMON = ["--model", "timm:test_resnet", "--quiet"]


def _ok(proc):
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def store(synth_root, tmp_path_factory):
    """An exact eval (run 1) and a newer bf16 eval (run 2) of one model on one dataset."""
    db = tmp_path_factory.mktemp("precision") / "r.db"
    _ok(run_cli("eval", "--data", synth_root, "--db", db, *COMMON))
    _ok(run_cli("eval", "--data", synth_root, "--db", db, "--precision", "bf16", *COMMON))
    return db


def _export(db, out, *args) -> tuple:
    _ok(run_cli("export", "--scorecard", "--out", out, "--db", db, *args))
    rows = list(csv.DictReader((out / "scorecard.csv").open()))
    infos = [json.loads(p.read_text()) for p in sorted((out / "model_info").rglob("*.json"))]
    return rows, infos


def test_the_exact_run_is_published_though_a_bf16_run_is_newer(store, tmp_path):
    rows, infos = _export(store, tmp_path / "sc")
    assert [r["precision"] for r in rows] == ["fp32"]
    (info,) = infos
    assert info["precision"] == "fp32"
    assert {h["run"] for h in info["headlines"].values()} == {1}
    assert {h["precision"] for h in info["headlines"].values()} == {"fp32"}
    board = json.loads(_ok(run_cli("leaderboard", "--db", store, "--format", "json", "--no-reported")).stdout)
    (row,) = [r for r in board if r["run_ids"]]
    assert row["run_ids"] == [1] and row["precision"] == "fp32"


def test_a_bf16_run_asked_for_by_id_is_shown_with_its_precision(store, tmp_path):
    rows, infos = _export(store, tmp_path / "sc", "--runs", "2")
    assert [r["precision"] for r in rows] == ["bf16 (eval)"]
    (info,) = infos
    assert {h["run"] for h in info["headlines"].values()} == {2}
    assert {h["precision"] for h in info["headlines"].values()} == {"bf16"}
    _ok(run_cli("report", "--db", store, "--runs", "2", "--out", tmp_path / "rep"))
    page = (tmp_path / "rep" / "index.html").read_text()
    assert '<span class="precision"' in page and "bf16 (eval)" in page
    _ok(run_cli("report", "--db", store, "--out", tmp_path / "exact"))
    assert '<span class="precision"' not in (tmp_path / "exact" / "index.html").read_text()


def test_runs_and_the_eval_table_say_bf16(store, synth_root):
    listing = _ok(run_cli("runs", "--db", store)).stdout.splitlines()
    assert listing[1].endswith("%") and listing[2].endswith("[bf16]")
    shown = _ok(run_cli("eval", "--data", synth_root, "--db", store, "--precision", "bf16", *COMMON)).stdout
    assert "precision: bf16 (not exact fp32" in shown  # the reused run says it too
    assert "precision:" not in _ok(run_cli("eval", "--data", synth_root, "--db", store, *COMMON)).stdout
