"""Studies across machines: `bgbench study --shard K/N` then `--merge`, and `--executor local` (real
submitit jobs, as processes on this machine), give the same scorecard, metrics and per-image rows
as the study run step after step in one process; a preempted job is requeued and resumes from its
own store with nothing recomputed; a killed `bgbench study`, run again, submits only what is missing.
Stores are read with sqlite3 (`helpers.study_runs`)."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bgbench.studies.jobs import job_name
from conftest import assert_one_line_error, run_cli
from helpers.study_runs import scorecard_cells, stored_runs

SRC = Path(__file__).resolve().parents[1] / "src"
STUDY = """
models = ["timm:test_resnet", {{model = "timm:test_efficientnet", label = "effnet"}}]
datasets = ["{data}"]
[measures.eval]
[measures.challenge]
sample = 4
[report]
out = "{out}"
"""


def _study(folder: Path, data: Path, name: str = "study") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(STUDY.format(data=data, out=folder / f"{name}-report"))
    return path


@pytest.fixture
def job_env(tmp_path, monkeypatch):
    """The jobs' processes import this checkout's bgbench, one thread each, and keep their stores
    in a scratch folder the test can read."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("BGBENCH_JOB_SCRATCH", str(tmp_path / "scratch"))
    return {**os.environ}


@pytest.fixture(scope="module")
def sequential(synth_root, tmp_path_factory):
    """The study run step after step in one process: its --json document and its store."""
    folder = tmp_path_factory.mktemp("sequential")
    db = folder / "one.db"
    proc = run_cli("study", _study(folder, synth_root), "--db", db, "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), db


def test_two_shards_merged_equal_one_run_and_merging_again_adds_nothing(sequential, synth_root, tmp_path):
    one, one_db = sequential
    study, db = _study(tmp_path, synth_root), tmp_path / "merged.db"
    shards = [json.loads(run_cli("study", study, "--shard", f"{k}/2", "--db", db, "--quiet", "--json").stdout)
              for k in (0, 1)]
    assert [[j["job"] for j in s["jobs"]] for s in shards] == [[job_name("timm:test_resnet", synth_root.name)],
                                                              ["effnet--" + synth_root.name]]
    assert not db.exists()  # a shard never writes the study's store
    merged = run_cli("study", study, "--merge", "--db", db, "--quiet", "--json")
    assert merged.returncode == 0, merged.stderr
    doc = json.loads(merged.stdout)
    assert sum(m["added"] for m in doc["merged"]) == 4
    assert scorecard_cells(doc) == scorecard_cells(one) and stored_runs(db) == stored_runs(one_db)
    assert [s["run"] for s in doc["steps"]] == [s["run"] for s in one["steps"]]  # merged in the plan's order
    again = json.loads(run_cli("study", study, "--merge", "--db", db, "--quiet", "--json").stdout)
    assert [m["added"] for m in again["merged"]] == [0, 0] and stored_runs(db) == stored_runs(one_db)
    rerun = json.loads(run_cli("study", study, "--shard", "1/2", "--db", db, "--quiet", "--json").stdout)
    assert rerun["done"][0]["ran"] == 0  # a shard run again resumes from its job's store


def test_merge_without_shards_and_conflicting_flags_are_one_line_errors(synth_root, tmp_path):
    study = _study(tmp_path, synth_root)
    assert_one_line_error(run_cli("study", study, "--merge", "--db", tmp_path / "r.db"), "no job stores", "--shard")
    assert_one_line_error(run_cli("study", study, "--shard", "2/2"), "--shard 2/2")
    assert_one_line_error(run_cli("study", study, "--shard", "0/2", "--merge"), "--shard and --merge")
    assert_one_line_error(run_cli("study", study, "--jobs", "2"), "--jobs", "--executor")
    bad = tmp_path / "bad.toml"
    bad.write_text(study.read_text() + "[executor]\nkind = \"pbs\"\n")
    assert_one_line_error(run_cli("study", bad), "executor.kind", "pbs")
    bad.write_text(study.read_text() + "[executor]\nnodes = 2\n")
    assert_one_line_error(run_cli("study", bad), "executor.nodes")


def test_local_executor_with_two_jobs_equals_the_sequential_study(sequential, synth_root, tmp_path, job_env):
    one, one_db = sequential
    study, db = _study(tmp_path, synth_root), tmp_path / "r.db"
    proc = run_cli("study", study, "--executor", "local", "--jobs", "2", "--db", db, "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert sorted(doc["submitted"]) == sorted([job_name("timm:test_resnet", synth_root.name),
                                               "effnet--" + synth_root.name])
    assert doc["failed"] == {} and doc["missing"] == []
    # what ran: every step, by the jobs, merged here (it said "0 steps ran, N were already in the store")
    assert doc["ran"] == 0 and doc["ran_by_jobs"] == len([s for s in doc["steps"] if s["skip"] is None]) > 0
    assert scorecard_cells(doc) == scorecard_cells(one) and stored_runs(db) == stored_runs(one_db)
    ids = json.loads((tmp_path / "study-report" / "jobs" / "submitted.json").read_text())["jobs"]
    assert {v["id"] for v in ids.values()} == set(doc["submitted"].values())  # kept for a rerun
    again = json.loads(run_cli("study", study, "--executor", "local", "--db", db, "--quiet", "--json").stdout)
    assert again["submitted"] == {} and again["jobs"] == []  # nothing missing: nothing submitted
    assert again["ran_by_jobs"] == 0


def _hijack_figures(report: Path) -> list:
    import hashlib
    return sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in report.glob("figures/*hijack*.png"))


def test_two_full_challenges_in_two_jobs_on_one_node_equal_the_sequential_study(synth_root, tmp_path, job_env):
    """`full = true` under `--executor local --jobs 2`: both jobs' stores on one node's scratch, merged;
    each model's prediction matrix, ASRs, class fool rates and hijack figure as the study run step
    after step (two full runs once wrote one `challenge_<run id>.npy` beside their stores)."""
    text = STUDY.replace("sample = 4", "full = true")
    made = {}
    for how in ("sequential", "jobs"):
        folder = tmp_path / how
        folder.mkdir()
        study = folder / "study.toml"
        study.write_text(text.format(data=synth_root, out=folder / "report"))
        extra = ["--executor", "local", "--jobs", "2"] if how == "jobs" else []
        proc = run_cli("study", study, "--db", folder / "r.db", "--quiet", "--json", *extra)
        assert proc.returncode == 0, proc.stderr
        made[how] = (json.loads(proc.stdout), folder)
    (one, seq), (two, jobs) = made["sequential"], made["jobs"]
    assert two["failed"] == {} and two["missing"] == []
    runs = stored_runs(jobs / "r.db")
    assert runs == stored_runs(seq / "r.db") and scorecard_cells(two) == scorecard_cells(one)
    matrices = [t["challenge_row"] for (kind, *_), t in runs.items() if kind == "challenge"]
    assert len(matrices) == 2 and all(len(m) == 36 for m in matrices) and matrices[0] != matrices[1]
    figures = _hijack_figures(jobs / "report")
    assert len(set(figures)) == 2 and figures == _hijack_figures(seq / "report")


def _finished_runs(db: Path):
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT id, kind, created FROM runs WHERE status IN ('done', 'sampled') "
                                "ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []


def _verdicts(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT count(*) FROM challenge_fg").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _wait_for(predicate, what: str, proc, limit: float = 300):
    deadline = time.time() + limit
    while time.time() < deadline:
        if predicate():
            return
        assert proc.poll() is None, f"bgbench study ended before {what}: {proc.stderr.read()}"
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _study_command(study, db, *extra):
    return [sys.executable, "-m", "bgbench", "study", str(study), "--executor", "local", "--db", str(db), "--quiet",
            "--json", *extra]


@pytest.mark.slow  # a real preemption of a submitit job: minutes; make test-all
def test_a_preempted_job_is_requeued_and_resumes_with_nothing_recomputed(synth_root, tmp_path, job_env):
    study = tmp_path / "full.toml"  # one job: an eval, then the full challenge (long enough to preempt)
    study.write_text(f'models = ["timm:test_resnet"]\ndatasets = ["{synth_root}"]\n[measures.eval]\n'
                     f'[measures.challenge]\nfull = true\n[report]\nout = "{tmp_path / "rep"}"\n')
    db = tmp_path / "r.db"
    proc = subprocess.Popen(_study_command(study, db), env=job_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    scratch = tmp_path / "scratch"
    local = lambda: next(iter(scratch.glob("bgbench-*.db")), Path("/nonexistent"))  # noqa: E731
    _wait_for(lambda: len(_finished_runs(local())) == 1 and _verdicts(local()) > 0, "the challenge's first verdicts",
              proc)
    before = _finished_runs(local())
    submitted = json.loads((tmp_path / "rep" / "jobs" / "submitted.json").read_text())["jobs"]
    controller = int(next(iter(submitted.values()))["id"])  # a local job's id is its controller's pid
    task = int(Path(f"/proc/{controller}/task/{controller}/children").read_text().split()[0])
    os.kill(task, signal.SIGUSR2)  # what Slurm sends before preempting (submitit's signal)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["failed"] == {} and doc["missing"] == []
    logs = "".join(p.read_text() for p in (tmp_path / "rep" / "jobs" / "submitit").glob("*_log.*"))
    assert "this job is preempted" in logs and "interrupted; its store so far saved" in logs
    assert "resuming challenge run 2" in logs  # the challenge went on from its stored verdicts
    job_store = next((tmp_path / "rep" / "jobs").glob("*--*.db"))
    after = _finished_runs(job_store)
    assert after[0] == before[0] and [k for _, k, _ in after] == ["eval", "challenge"]  # the eval was not rerun
    assert len(stored_runs(db)) == 2


@pytest.mark.slow  # a SIGKILLed study of real jobs: minutes; make test-all
def test_a_killed_study_command_rerun_submits_only_the_missing_jobs(synth_root, tmp_path, job_env):
    study, db = _study(tmp_path, synth_root), tmp_path / "r.db"
    jobs = tmp_path / "study-report" / "jobs"
    proc = subprocess.Popen(_study_command(study, db, "--jobs", "1"), env=job_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = lambda: json.loads((jobs / "submitted.json").read_text())["jobs"] if (jobs / "submitted.json").is_file() \
        else {}  # noqa: E731
    _wait_for(lambda: len(first()) == 1, "the first job's submission", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = first()
    assert len(before) == 1  # killed with one job submitted (it runs on) and one not yet
    rerun = run_cli("study", study, "--executor", "local", "--jobs", "1", "--db", db, "--quiet", "--json")
    assert rerun.returncode == 0, rerun.stderr
    doc = json.loads(rerun.stdout)
    (name, entry), = before.items()
    assert name not in doc["submitted"] and len(doc["submitted"]) == 1  # only the missing job
    assert doc["waited"] in ({name: entry["id"]}, {})  # still running (waited for), or ended and merged at the start
    after = json.loads((jobs / "submitted.json").read_text())["jobs"]
    assert after[name] == entry and len(after) == 2
    assert doc["missing"] == [] and len(stored_runs(db)) == 4


def test_a_store_on_nfs_gets_one_warning_naming_the_job_stores(synth_root, tmp_path, monkeypatch):
    from bgbench.store import mounts
    table = tmp_path / "mounts"
    table.write_text(f"/dev/sda1 / ext4 rw 0 0\nfiler:/export {tmp_path / 'shared'} nfs4 rw,vers=4.2 0 0\n"
                     f"tmpfs {tmp_path / 'shared' / 'fast'} tmpfs rw 0 0\n")
    monkeypatch.setattr(mounts, "MOUNTS", table)
    (tmp_path / "shared" / "fast").mkdir(parents=True)  # a mount point exists
    assert mounts.network_filesystem(tmp_path / "shared" / "a" / "r.db") == "nfs4"  # a file not made yet
    assert mounts.network_filesystem(tmp_path / "shared" / "fast" / "r.db") is None  # the longest mount point wins
    assert mounts.network_filesystem(tmp_path / "local.db") is None
    study = _study(tmp_path, synth_root)
    proc = run_cli("study", study, "--dry-run", "--db", tmp_path / "shared" / "r.db")
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if "network file system" in ln]
    assert len(warnings) == 1 and "nfs4" in warnings[0] and str(tmp_path / "study-report" / "jobs") in warnings[0]
    local = run_cli("study", study, "--dry-run", "--db", tmp_path / "r.db")
    assert "network file system" not in local.stderr


def test_help_imports_no_submitit():
    code = ("import sys\nfrom bgbench.cli import build_parser\np = build_parser()\n"
            "p._subparsers._group_actions[0].choices['study'].format_help()\n"
            "import bgbench.studies\nprint('submitit' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.stdout.strip() == "False", proc.stderr
    import submitit  # noqa: F401 (a dependency: the executor needs it)


def test_slurm_settings_come_from_the_study_file_and_the_flags(synth_root, tmp_path, monkeypatch):
    """The sbatch script submitit would submit (a stand-in `srun` makes this machine look like a
    Slurm node); without one, --executor slurm is one line."""
    import argparse

    from bgbench.studies import load_study
    from bgbench.studies.cluster import executor_settings, make_executor
    study = _study(tmp_path, synth_root)
    study.write_text(study.read_text() + '[executor]\nkind = "slurm"\npartition = "cpu"\ncpus_per_job = 4\n'
                     'time = 90\nsbatch = { account = "lab" }\n')
    if not any((Path(d) / "srun").exists() for d in os.environ["PATH"].split(os.pathsep)):
        assert_one_line_error(run_cli("study", study, "--db", tmp_path / "r.db"), "--executor slurm", "srun")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    flags = argparse.Namespace(executor=None, jobs=3, partition="gpu", gpus_per_job=1, cpus_per_job=None, time=None,
                               sbatch=["qos=high"])
    settings = executor_settings(load_study(study), flags)
    script = make_executor(settings, tmp_path / "logs", "cuda")._executor._make_submission_file_text("CMD", "u")
    for line in ("--partition=gpu", "--gpus-per-node=1", "--cpus-per-task=4", "--time=90", "--account=lab",
                 "--qos=high", "--signal=USR2@"):
        assert f"#SBATCH {line}" in script, line
    assert settings.jobs == 3  # the array's parallelism


def test_a_failed_job_is_reported_with_its_log_and_the_study_goes_on(synth_root, tmp_path, job_env, monkeypatch):
    blocked = tmp_path / "not-a-folder"  # the jobs' local disk is a file: every job fails as it starts
    blocked.write_text("")
    monkeypatch.setenv("BGBENCH_JOB_SCRATCH", str(blocked))
    study, db = _study(tmp_path, synth_root), tmp_path / "r.db"
    proc = run_cli("study", study, "--executor", "local", "--jobs", "2", "--db", db, "--quiet", "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.split("its log ends")[0]
    doc = json.loads(proc.stdout)
    assert sorted(doc["failed"]) == sorted(doc["submitted"]) and len(doc["failed"]) == 2  # both reported, both tried
    assert all("not-a-folder" in tail for tail in doc["failed"].values())  # the log's last lines say why
    assert len(doc["missing"]) == 4 and proc.stderr.count("failed; the study goes on") == 2
    assert doc["report"] is None  # nothing stored, nothing to report
