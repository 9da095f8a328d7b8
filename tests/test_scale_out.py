"""Every model job under torchrun: real `torchrun --standalone --nproc-per-node 2 -m bgbench ...`
processes on the CPU (gloo), checked against one process of the same command."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bgbench.distributed import Ranks, in_order, share
from bgbench.errors import BgbenchError
from bgbench.models import create_model
from bgbench.store import Store
from bgbench.training.config import TrainConfig
from bgbench.training.loop import _check_world
from conftest import assert_one_line_error, run_cli
from helpers.contract import run_under_torchrun

SRC = Path(__file__).resolve().parents[1] / "src"
ARCH = "timm:test_resnet"




def _env(db: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(SRC), "BGBENCH_DB": str(db), "OMP_NUM_THREADS": "1"}


def _torchrun(*args) -> list:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            "-m", "bgbench", *map(str, args)]


def _run2(db: Path, *args) -> subprocess.CompletedProcess:
    proc = subprocess.run(_torchrun(*args), env=_env(db), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _one_run(db: Path, kind: str):
    with Store(db) as store:
        runs = store.runs(kind)
    assert len(runs) == 1, [dict(r) for r in runs]  # recorded once, by rank 0
    return runs[0]


def _rows(rows) -> list:
    return sorted(tuple(v for k, v in dict(r).items() if k != "run_id") for r in rows)


def test_blocks_go_round_robin_and_come_back_in_order():
    """Hand-worked: 5 images in blocks of 2 are blocks [0,1] [2,3] [4]; 2 ranks take blocks 0,2 and 1."""
    assert share(5, Ranks(world=2, rank=0), block=2) == [0, 1, 4]
    assert share(5, Ranks(world=2, rank=1), block=2) == [2, 3]
    assert in_order([["a", "b", "e"], ["c", "d"]], 5, world=2, block=2) == ["a", "b", "c", "d", "e"]
    with pytest.raises(RuntimeError):
        in_order([["a"], ["c", "d"]], 5, world=2, block=2)


def test_a_torchrun_batch_must_split_and_sync_bn_needs_gpus(synth_root):
    cfg = TrainConfig(data=str(synth_root), out="x", batch_size=5)
    with pytest.raises(BgbenchError, match="multiple of 2"):
        _check_world(cfg, Ranks(world=2, rank=0))
    with pytest.raises(BgbenchError, match="--sync-bn needs --device cuda"):
        _check_world(TrainConfig(data=str(synth_root), out="x", batch_size=4, sync_bn=True), Ranks(world=2))
    _check_world(cfg, Ranks())  # one process: any batch


def test_two_process_eval_and_noise_probe_equal_one_process(synth_root, tmp_path, one_thread):
    """Blocks of 7 of 36 images: rank 0 gets 3 blocks (21 images), rank 1 the other 15; the rows and
    metrics rank 0 records are those of one process, and there is one run of each."""
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    common = ["--model", ARCH, "--data", synth_root, "--batch-size", 7, "--quiet"]
    probe = ["probe", "noise", *common, "--levels", "0.2", "0.5", "--trials", 2]
    dfr = ["train", "--recipe", "dfr", *common, "--retrains", 2]  # its features are extracted by 2 processes
    study = tmp_path / "noise.toml"  # the noise probe as a study's step: sharded as the command is
    study.write_text(f'models = ["{ARCH}"]\ndatasets = ["{synth_root}"]\n[measures.noise]\nlevels = ["0.2", "0.5"]\n'
                     f'trials = 2\nbatch_size = 7\n[report]\nout = "{tmp_path / "study"}"\n')
    run_under_torchrun([["eval", *common], ["study", study, "--quiet"], [*dfr, "--out", tmp_path / "dfr2",
                                                                         "--feature-cache", tmp_path / "cache2"]],
                       two)  # one launch, 3 commands
    for args in (["eval", *common], probe, [*dfr, "--out", tmp_path / "dfr1", "--feature-cache", tmp_path / "cache1"]):
        proc = run_cli(*args, "--db", one)  # one process: the same command in this interpreter
        assert proc.returncode == 0, proc.stderr
    _same_features_and_head(tmp_path)
    with Store(one) as a, Store(two) as b:
        ra, rb = _one_run(one, "eval"), _one_run(two, "eval")
        assert json.loads(rb["config"])["world_size"] == 2 and "world_size" not in json.loads(ra["config"])
        pa, pb = _rows(a.predictions(ra["id"])), _rows(b.predictions(rb["id"]))
        assert len(pa) == 36 * len(a.run_variants(ra["id"])) and len(a.run_variants(ra["id"])) > 1
        assert pa == pb
        assert _rows(a.metrics(ra["id"])) == _rows(b.metrics(rb["id"]))
        na, nb = _one_run(one, "probe_noise"), _one_run(two, "probe_noise")
        assert json.loads(nb["config"])["world_size"] == 2  # the study's step ran on both processes
        rows_a, rows_b = _rows(a.probe_rows("probe_noise", na["id"])), _rows(b.probe_rows("probe_noise", nb["id"]))
        assert len(rows_a) == 36 * 2 * 2 * 2 and rows_a == rows_b
        assert {r[5] for r in rows_a} == {0, 1}  # some noisy copies right, some wrong


def _same_features_and_head(tmp_path):
    """DFR under torchrun: the cached features and the fitted head are those of one process."""
    (f1,), (f2,) = (list((tmp_path / f"cache{k}").glob("*.npz")) for k in (1, 2))
    with np.load(f1) as a, np.load(f2) as b:
        assert list(a["image_ids"]) == list(b["image_ids"]) and np.array_equal(a["x"], b["x"])
    h1, h2 = (torch.load(tmp_path / f"dfr{k}" / "model.pt", weights_only=True)["state_dict"] for k in (1, 2))
    assert all(torch.equal(h1[k], h2[k]) for k in h1)
    assert json.loads((tmp_path / "dfr2" / "config.json").read_text())["world_size"] == 2


def test_two_process_attribute_probes_equal_one_process(synth_root, tmp_path, one_thread):
    """probe noise --region attributes, probe ablate and probe attribution (Synthetic-9's parts) on 2
    processes: rank 0 records the rows of one process (attribution ranks features over every image)."""
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    common = ["--model", ARCH, "--data", synth_root, "--batch-size", 7, "--quiet"]
    jobs = {"probe_noise": ["probe", "noise", *common, "--region", "attributes", "--levels", "0.5", "--trials", 1],
            "probe_ablate": ["probe", "ablate", *common], "probe_attribution": ["probe", "attribution", *common]}
    run_under_torchrun(list(jobs.values()), two)
    for args in jobs.values():
        proc = run_cli(*args, "--db", one)
        assert proc.returncode == 0, proc.stderr
    with Store(one) as a, Store(two) as b:
        for kind in jobs:
            ra, rb = _one_run(one, kind), _one_run(two, kind)
            assert json.loads(rb["config"])["world_size"] == 2
            rows_a, rows_b = _rows(a.probe_rows(kind, ra["id"])), _rows(b.probe_rows(kind, rb["id"]))
            assert rows_a and rows_a == rows_b, kind
            assert _rows(a.metrics(ra["id"])) == _rows(b.metrics(rb["id"])), kind
        noise = _rows(a.probe_rows("probe_noise", _one_run(one, "probe_noise")["id"]))
        assert any(r[2].startswith("attr:") for r in noise)


def _train_args(data: Path, out: Path) -> list:
    return ["train", "--data", data, "--model", ARCH, "--recipe", "bgswap", "--swa", "--epochs", 4,
            "--batch-size", 4, "--threads", 1, "--out", out, "--quiet"]


def _tree(pid: int) -> list:
    """`pid` and its descendants (torchrun starts its workers in sessions of their own, so a process
    group does not reach them)."""
    kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid] + [p for k in kids for p in _tree(int(k))]


def _kill_tree(pid: int) -> None:
    for p in reversed(_tree(pid)):  # the workers first, then torchrun
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _kill_after_first_epoch(db: Path, args: list, out: Path) -> int:
    """Start 2-process training, SIGKILL both workers and torchrun once an epoch is logged; epochs done."""
    proc = subprocess.Popen(_torchrun(*args), env=_env(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log = out / "log.jsonl"
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            if log.is_file() and log.read_text().count("\n") >= 1:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
    finally:
        _kill_tree(proc.pid)
        proc.wait(timeout=30)
    return log.read_text().count("\n")


@pytest.mark.slow  # torchrun training killed and resumed: minutes; make test-all
def test_two_process_training_resumes_after_sigkill_and_evaluates(synth_root, tmp_path):
    """bgswap + SWA on 2 processes: killed after an epoch, the same command continues from last.pt and
    ends where an uninterrupted 2-process run ends; the checkpoint loads and evaluates; a 1-process
    resume of it is refused in one line."""
    db, out, ref = tmp_path / "r.db", tmp_path / "run", tmp_path / "ref"
    args = _train_args(synth_root, out)
    done = _kill_after_first_epoch(db, args, out)
    assert 1 <= done < 4 and not (out / "model.pt").exists()  # really killed mid-run
    again = _run2(db, *args)
    assert f"resuming {out} from epoch {done}/4" in again.stderr
    assert [json.loads(line)["epoch"] for line in (out / "log.jsonl").read_text().splitlines()] == [1, 2, 3, 4]
    _run2(db, *_train_args(synth_root, ref))
    a = torch.load(out / "model.pt", weights_only=True)
    b = torch.load(ref / "model.pt", weights_only=True)
    assert a["config"]["world_size"] == 2
    for k, v in a["state_dict"].items():
        assert torch.allclose(v.float(), b["state_dict"][k].float(), atol=1e-5), k
    with Store(db) as store:
        assert len(store.runs("train")) == 2  # one per finished run: rank 0 records, rank 1 does not
    model = create_model(f"file:{out / 'model.pt'}")
    assert model.spec.num_classes == 9
    proc = run_cli("eval", "--model", f"file:{out / 'model.pt'}", "--data", synth_root, "--variants", "original",
                   "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert 0 <= json.loads(proc.stdout)["accuracy"]["original"]["value"] <= 1
    assert_one_line_error(run_cli(*args), "2 process", "torchrun --nproc-per-node 2")
