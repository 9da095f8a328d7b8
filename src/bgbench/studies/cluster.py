"""`bgbench study FILE --executor local|slurm`: a study's jobs (`jobs`) submitted through submitit,
the field's engine (Whac-A-Mole submits its model jobs so), not a scheduler of bgbench's own.

This process is the only one that writes the study's store: it merges each job's store as the job
ends, reports a failed job with its log's last lines and goes on with the others, then writes the
report. The ids of the jobs it submitted are kept in OUT/jobs/submitted.json, so that a killed
`bgbench study`, run again, waits for the jobs still running, merges those that ended and submits
only the jobs whose steps are still missing. A job is submitit-checkpointable: preempted or past its
time limit, it saves its store so far and is requeued, and resumes from it (`jobs.run_job`).

submitit is imported only here, inside functions, so that `bgbench --help` never imports it.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..console import status
from ..errors import BgbenchError
from ..options import flagged_fields
from ..store import Store
from ..store.merge import MergeCount
from .executor import DEFAULT_MINUTES, ExecutorSettings, script_hazard, with_flags
from .jobs import (Job, finished_store, job_stores, jobs_folder, merge_job_store, pictures_folder, plan_jobs, run_job,
                   save_partial)
from .plan import plan
from .runner import StudyResult, refuse_problems, run_study
from .spec import Study

#: The ids of the submitted jobs, in the jobs folder.
SUBMITTED = "submitted.json"
#: Seconds between two looks at the jobs (Slurm's accounting is asked at most this often).
POLL_S = {"local": 0.5, "slurm": 15.0}
#: A failed job's log: how many of its last lines are shown.
LOG_LINES = 8


def executor_settings(study: Study, args: Any) -> Optional[ExecutorSettings]:
    """The executor the command asks for: the study's [executor] table with the flags over it; None
    when neither names a kind (the study runs here, step after step)."""
    flags = {f.name: getattr(args, spec.get("dest", f.name)) for f, spec in flagged_fields(ExecutorSettings)}
    settings = with_flags(study.executor, flags)
    if settings.kind is None:
        given = [f"--{k.replace('_', '-')}" for k, v in flags.items() if v is not None and k != "kind"]
        if given:
            raise BgbenchError(f"{given[0]} sets how jobs are submitted: add --executor local|slurm (or kind in "
                               f"the study's [executor] table)")
        return None
    return settings


class StudyJob:
    """One job as submitit runs it: picklable, and checkpointable (submitit calls `checkpoint` on
    preemption or at the time limit, then requeues what it returns)."""

    def __init__(self, study: Study, job: Job, device: str, only: List[str], pictures: Path, progress: bool = True):
        # progress: the job's progress lines, in its log
        self.study, self.job, self.device, self.only, self.pictures, self.progress = (study, job, device, only,
                                                                                     pictures, progress)

    def __call__(self) -> dict:
        status(f"job {self.job.name}: {len(self.only)} steps to run ({', '.join(self.only)})")
        return run_job(self.study, self.job, device=self.device, progress=self.progress, only=set(self.only),
                       pictures=self.pictures)

    def checkpoint(self, *args, **kwargs):
        import submitit
        saved = save_partial(self.study, self.job)
        status(f"job {self.job.name}: interrupted; its store so far saved to {saved}, requeued")
        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def make_executor(settings: ExecutorSettings, folder: Path, device: str):
    """submitit's executor for `settings`: Slurm's with its resources, or the local one."""
    import submitit
    minutes = settings.time or DEFAULT_MINUTES
    if settings.kind == "local":
        executor = submitit.LocalExecutor(folder)
        gpus = settings.gpus_per_job if settings.gpus_per_job is not None else int(device.startswith("cuda"))
        executor.update_parameters(timeout_min=minutes, gpus_per_node=gpus)
        return executor
    try:
        executor = submitit.AutoExecutor(folder, cluster="slurm")
    except RuntimeError as e:  # submitit finds no srun: not a Slurm cluster's node
        raise BgbenchError(f"--executor slurm: no Slurm here ({e}); run `bgbench study` on the cluster's login "
                           f"node, or use --executor local") from None
    given = {"slurm_partition": settings.partition or None, "gpus_per_node": settings.gpus_per_job,
             "cpus_per_task": settings.cpus_per_job, "slurm_array_parallelism": settings.jobs,
             "slurm_additional_parameters": dict(settings.sbatch) or None}
    executor.update_parameters(timeout_min=minutes, name="bgbench-study", slurm_signal_delay_s=120,
                               **{k: v for k, v in given.items() if v is not None})
    return executor


def _read_submitted(folder: Path) -> Dict[str, dict]:
    path = folder / SUBMITTED
    try:
        return json.loads(path.read_text()).get("jobs", {}) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _write_submitted(folder: Path, jobs: Dict[str, dict]) -> None:
    """Written beside and renamed onto the file, so a kill never leaves half of it."""
    path = folder / SUBMITTED
    tmp = path.with_name(f".{SUBMITTED}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"jobs": jobs}, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _attach(entry: dict):
    """The submitit job of an entry of submitted.json (a job an earlier `bgbench study` submitted)."""
    import submitit
    cls = submitit.LocalJob if entry["kind"] == "local" else submitit.SlurmJob
    return cls(entry["folder"], entry["id"])


def _running(entry: dict) -> bool:
    """Whether a job an earlier `bgbench study` submitted is still pending or running. A local job
    is its controller process (its id is the pid; the command line tells it from a reused pid)."""
    if entry["kind"] == "local":
        try:
            return b"submitit" in Path(f"/proc/{int(entry['id'])}/cmdline").read_bytes()
        except (OSError, ValueError):
            return False
    return not _attach(entry).done()


def _log_tail(job) -> str:
    """The last lines of a job's log (stderr, else stdout), for the line that reports it failed."""
    for read in (job.stderr, job.stdout):
        try:
            text = read() or ""
        except Exception:  # noqa: BLE001 (a log submitit cannot find is not an error of the study)
            text = ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if lines:
            return "\n".join("    " + ln for ln in lines[-LOG_LINES:])
    return "    (no log)"


@dataclass
class ClusterResult:
    """What a study through an executor did: its jobs (submitted now, or found running), the job
    stores merged, the jobs that failed (with their log's last lines), and the study's result."""

    study: StudyResult
    jobs: List[Job]
    submitted: Dict[str, str] = field(default_factory=dict)  # job name -> id, submitted by this command
    waited: Dict[str, str] = field(default_factory=dict)  # job name -> id, found running from an earlier one
    merged: List[MergeCount] = field(default_factory=list)
    failed: Dict[str, str] = field(default_factory=dict)  # job name -> its log's last lines
    executor: str = "local"

    @property
    def complete(self) -> bool:
        return not self.failed and not self.study.missing

    def to_dict(self) -> dict:
        return {**self.study.to_dict(), "executor": self.executor, "jobs": [j.to_dict() for j in self.jobs],
                "submitted": self.submitted, "waited": self.waited, "merged": [m.to_dict() for m in self.merged],
                "failed": self.failed, "missing": self.study.missing}

    def text(self) -> str:
        lines = [self.study.text(), "",
                 f"{len(self.jobs)} jobs ({self.executor}): {len(self.submitted)} submitted, {len(self.waited)} "
                 f"waited for from an earlier run, {sum(m.added for m in self.merged)} runs merged"]
        lines += [f"job {name} failed; its log ends:\n{tail}" for name, tail in self.failed.items()]
        return "\n".join(lines)


def run_cluster(study: Study, db: Optional[str | Path], settings: ExecutorSettings, *, device: str = "cpu",
                progress: bool = True) -> ClusterResult:
    """Run the study's missing steps as submitit jobs, merging each job's store as it ends, then
    write the report (see the module docstring)."""
    t0 = time.time()
    folder = jobs_folder(study)
    why = script_hazard(str(folder.absolute()))
    if settings.kind == "slurm" and why:  # submitit writes the folder into the job script's lines
        raise BgbenchError(f"{folder}: a study's output folder cannot go into a Slurm job script: {why}")
    executor = make_executor(settings, folder / "submitit", device)  # no Slurm here: one line, before any work
    folder.mkdir(parents=True, exist_ok=True)
    pictures = pictures_folder(db)
    with Store(db) as store:
        # jobs that ended while no `bgbench study` was merging
        merged = [merge_job_store(store, path) for path in job_stores(study)]
        steps = plan(study, store)
        refuse_problems(study, steps)
        planned = StudyResult(study, steps)
        missing = set(planned.missing)
        jobs = [j for j in plan_jobs(study, steps) if missing & set(j.steps)]
        result = ClusterResult(planned, jobs, merged=merged, executor=settings.kind)
        earlier = _read_submitted(folder)
        active: Dict[str, tuple] = {j.name: (None, earlier[j.name]) for j in jobs
                                    if j.name in earlier and _running(earlier[j.name])}
        result.waited = {name: entry["id"] for name, (_, entry) in active.items()}
        pending = [j for j in jobs if j.name not in active]
        limit = settings.jobs or (len(pending) or 1)
        status(f"{len(jobs)} jobs (one per model and dataset; a dataset's edits are one): {len(active)} running from "
               f"an earlier `bgbench study`, {len(pending)} to submit ({settings.kind}, {limit} at once)")
        by_name = {j.name: j for j in jobs}
        while pending or active:
            batch = pending if settings.kind == "slurm" else pending[:max(0, limit - len(active))]
            if batch:
                pending = [j for j in pending if j not in batch]
                for job, handle in zip(batch, _submit(executor, study, batch, missing, device, pictures, progress)):
                    entry = {"kind": settings.kind, "id": str(handle.job_id), "folder": str(folder / "submitit"),
                             "submitted": time.time()}
                    earlier[job.name] = entry
                    active[job.name] = (handle, entry)
                    result.submitted[job.name] = entry["id"]
                    status(f"job {job.name} submitted (id {entry['id']}): {len(job.steps)} steps")
                _write_submitted(folder, earlier)
            for name, (job, entry) in list(active.items()):
                # ended: asked of submitit for a job this process submitted, else as `_running`
                if job.done() if job is not None else not _running(entry):
                    del active[name]
                    _collect(store, study, by_name[name], (job, entry), result)
            if pending or active:
                time.sleep(POLL_S[settings.kind])
    result.study = run_study(study, db, device=device, progress=False, execute=False)
    result.study.seconds = time.time() - t0
    result.study.ran_by_jobs = sum(s.title in missing and s.done_run is not None for s in result.study.steps)
    return result


def _submit(executor, study: Study, batch: List[Job], missing: set, device: str, pictures: Path,
            progress: bool) -> list:
    """Submit the jobs of `batch` (as one Slurm array); their submitit jobs, in order."""
    import submitit
    calls = [StudyJob(study, job, device, [t for t in job.steps if t in missing], pictures, progress)
             for job in batch]
    try:
        if len(calls) == 1:
            return [executor.submit(calls[0])]
        with executor.batch():
            handles = [executor.submit(call) for call in calls]
    except submitit.core.utils.FailedJobError as e:  # sbatch said no: its own words, on one line
        said = " ".join(str(e).split())
        raise BgbenchError(f"the scheduler refused the study's jobs: {said}") from None
    return handles


def _collect(store: Store, study: Study, job: Job, handle: tuple, result: ClusterResult) -> None:
    """A job that ended: its store merged, or the job reported with its log's last lines."""
    submitted, entry = handle
    sub = submitted if submitted is not None else _attach(entry)
    try:
        sub.result()
        ok = True
    except Exception:  # noqa: BLE001 (submitit's FailedJobError, UncompletedJobError ...: the job failed)
        ok = False
    path = finished_store(study, job)
    if ok and path.is_file():
        count = merge_job_store(store, path)
        result.merged.append(count)
        status(f"job {job.name} (id {entry['id']}) ended: {count.added} runs merged into {store.path}")
        return
    tail = _log_tail(sub)
    result.failed[job.name] = tail
    status(f"job {job.name} (id {entry['id']}) failed; the study goes on. Its log ends:\n{tail}")
