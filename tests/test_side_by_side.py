"""Commands that write a folder, run side by side into one folder: each finishes, and none fails on,
or removes, another's stage. Two real `bgbench report` processes into one `--out`; two jobs whose
stages are open at once (a report, a dataset split) committed in turn."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(scope="module")
def store(synth_root, tmp_path_factory):
    db = tmp_path_factory.mktemp("side") / "r.db"
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    return db


def _no_stage_left(parent: Path) -> bool:
    return not list(parent.glob(".*.bgbench-*.partial"))


def test_two_reports_into_one_out_at_once_both_finish(store, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    out = tmp_path / "report"
    procs = [subprocess.Popen([sys.executable, "-m", "bgbench", "report", "--db", str(store), "--out", str(out),
                               "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err
    listed = [ln for ln in (out / "REPORT_FILES.txt").read_text().splitlines() if not ln.startswith("#")]
    assert "index.html" in listed and all((out / f).exists() for f in listed)
    assert _no_stage_left(tmp_path)


def test_a_second_report_opened_while_the_first_is_staged_leaves_the_first_its_stage(store, tmp_path):
    """The first report's stage is open when a second starts: the second never removes it, and both
    commit (the second replacing the first's files as bgbench's own)."""
    from bgbench.reporting.render import report_output
    out = tmp_path / "report"
    first, second = report_output(out), report_output(out)
    (first.open() / "index.html").write_text("<title>bgbench report</title> first")
    (second.open() / "index.html").write_text("<title>bgbench report</title> second")
    assert (first.stage / "index.html").read_text().endswith("first")  # the second's open() left it
    first.commit()
    second.commit()
    assert (out / "index.html").read_text().endswith("second") and _no_stage_left(tmp_path)


@pytest.mark.parametrize("splits", [("val", "train"), ("val", "val")])
def test_two_synth_jobs_into_one_folder_at_once_both_finish(splits, tmp_path):
    """`synth` of two splits, or of one split twice, into one folder at once: each job finishes (or,
    starting after the other's split is in, refuses as it would alone) and the folder holds each
    split whole."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    out = tmp_path / "data"
    procs = [subprocess.Popen([sys.executable, "-m", "bgbench", "synth", "--out", str(out), "--split", split,
                               "--per-class", "3", "--size", "32", "--quiet"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for split in splits]
    codes = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        # one split twice: a job that starts after the other has moved its split in refuses, as run alone
        refused = p.returncode == 2 and "--overwrite" in err and "Traceback" not in err
        assert p.returncode == 0 or (refused and splits[0] == splits[1]), err
        codes.append(p.returncode)
    assert 0 in codes
    for split in set(splits):
        assert len(list((out / "original" / split).rglob("*.*"))) == 27, split
    listed = [ln for ln in (out / "FILES_val.txt").read_text().splitlines() if not ln.startswith("#")]
    assert listed and all((out / f).exists() for f in listed)
    assert _no_stage_left(tmp_path)
