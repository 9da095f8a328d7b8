"""No user string becomes a line of a Slurm job script: sbatch options from a study file (keys and
values) or from `--sbatch`, the partition and the study's output folder are refused in one line,
before anything is written, when they hold a newline or shell syntax; what is accepted is run here
as the script submitit would submit (stand-in `srun`), and writes no marker. A scheduler that
refuses the jobs is one line too."""
import argparse
import os
import subprocess
from pathlib import Path

import pytest

from bgbench.errors import BgbenchError
from conftest import assert_one_line_error, run_cli

STUDY = """
models = ["timm:test_resnet"]
datasets = ["{data}"]
[measures.eval]
[report]
out = "{out}"
[executor]
kind = "slurm"
{executor}
"""


def _study(folder: Path, data: Path, executor: str = "", out: str | None = None) -> Path:
    path = folder / "study.toml"
    out = out if out is not None else str(folder / "report")
    path.write_text(STUDY.format(data=data, out=out, executor=executor))
    return path


@pytest.fixture
def slurm_node(tmp_path, monkeypatch):
    """This machine made to look like a Slurm node: stand-ins for `srun` (does nothing) and `sbatch`
    (what the test writes), first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def _flags(**given) -> argparse.Namespace:
    flags = dict(executor=None, jobs=None, partition=None, gpus_per_job=None, cpus_per_job=None, time=None,
                 sbatch=None)
    return argparse.Namespace(**{**flags, **given})


def _script_runs_clean(study_path: Path, flags: argparse.Namespace, folder: Path) -> str:
    """The job script bgbench would have submitted for this study and these flags, run with bash;
    asserts it wrote no marker and returns it. A refused setting is one BgbenchError."""
    from bgbench.studies import load_study
    from bgbench.studies.cluster import executor_settings, make_executor
    settings = executor_settings(load_study(study_path), flags)
    executor = make_executor(settings, folder / "logs", "cpu")
    script = executor._executor._make_submission_file_text("true", "u")
    (folder / "job.sh").write_text(script)
    subprocess.run(["bash", str(folder / "job.sh")], cwd=folder, capture_output=True, timeout=60)
    assert not (folder / "MARK").exists(), script
    return script


CRAFTED = {
    "a key with a newline": ('sbatch = { "qos=normal\\ntouch MARK #" = "1" }', None),
    "a value with a newline": ('sbatch = { account = "lab\\ntouch MARK #" }', None),
    "a value with a carriage return and a newline": ('sbatch = { account = "lab\\r\\ntouch MARK #" }', None),
    "a key with shell syntax": ('sbatch = { "x;touch MARK" = "1" }', None),
    "a value with a semicolon": ('sbatch = { comment = "a; touch MARK" }', None),
    "a value with command substitution": ('sbatch = { comment = "$(touch MARK)" }', None),
    "a value with backquotes": ('sbatch = { comment = "`touch MARK`" }', None),
    "a partition with a newline": ('partition = "cpu\\ntouch MARK #"', None),
    "an --sbatch flag with a newline": ("", ["account=lab\ntouch MARK #"]),
    "an --sbatch flag's key with a newline": ("", ["qos=normal\ntouch MARK #=1"]),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_sbatch_setting_is_refused_and_never_runs(case, synth_root, tmp_path, slurm_node):
    executor, sbatch = CRAFTED[case]
    study = _study(tmp_path, synth_root, executor)
    try:
        _script_runs_clean(study, _flags(sbatch=sbatch), tmp_path)
    except BgbenchError as e:
        assert "\n" not in str(e).strip()
    else:
        pytest.fail(f"{case}: accepted")
    args = ["study", study, "--db", tmp_path / "r.db"] + [f"--sbatch={s}" for s in sbatch or []]
    proc = run_cli(*args)
    assert_one_line_error(proc)
    assert not (tmp_path / "report").exists() and not (tmp_path / "MARK").exists()  # nothing written


def test_accepted_settings_are_quoted_into_the_script_and_run_nothing(synth_root, tmp_path, slurm_node):
    """What sbatch options need (a constraint's `|`, `&` and brackets, a comment with spaces, an
    address) passes, each quoted into its own #SBATCH line."""
    study = _study(tmp_path, synth_root, 'sbatch = { constraint = "[a100|h100]&ib", comment = "my run", '
                   'mail_user = "me@lab.org", exclusive = true }')
    script = _script_runs_clean(study, _flags(sbatch=["qos=high"]), tmp_path)
    for line in ("#SBATCH --constraint='[a100|h100]&ib'", "#SBATCH --comment='my run'",
                 "#SBATCH --mail-user=me@lab.org", "#SBATCH --exclusive", "#SBATCH --qos=high"):
        assert line in script.splitlines(), line


def test_an_output_folder_with_a_newline_is_refused_for_slurm(synth_root, tmp_path, slurm_node):
    out = str(tmp_path / "rep") + "\\ntouch MARK #"
    study = _study(tmp_path, synth_root, out=out)
    assert_one_line_error(run_cli("study", study, "--db", tmp_path / "r.db"), "Slurm job script")
    assert not any(p.name.startswith("rep") for p in tmp_path.iterdir())


def test_no_slurm_here_leaves_no_jobs_folder(synth_root, tmp_path):
    if any((Path(d) / "srun").exists() for d in os.environ["PATH"].split(os.pathsep)):
        pytest.skip("this machine has srun")
    study = _study(tmp_path, synth_root)
    assert_one_line_error(run_cli("study", study, "--db", tmp_path / "r.db"), "--executor slurm", "srun")
    assert not (tmp_path / "report").exists()


def test_a_scheduler_that_refuses_the_jobs_is_one_line(synth_root, tmp_path, slurm_node):
    (slurm_node / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: Batch job submission failed: "
                                       "Invalid account or account/partition combination specified' >&2\nexit 1\n")
    (slurm_node / "sbatch").chmod(0o755)
    study = _study(tmp_path, synth_root, 'sbatch = { account = "nolab" }')
    proc = run_cli("study", study, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "refused", "Invalid account")
