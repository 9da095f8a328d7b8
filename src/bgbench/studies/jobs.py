"""A study's jobs: its steps grouped so that each group can run on a machine of its own, into a
results store of its own, for `--shard K/N` (here) and `--executor` (`cluster`).

One job per (model, dataset), the default: one node fetches the model's weights and the
dataset's images for all of that model's measures on it (its later steps read them from the node's
page cache, not again over the network file system), each job is one model's result on one
dataset (as CLIP_benchmark and HELM cut theirs), and it shares nothing with another job, so jobs
need no order. Finer jobs (one per step) would fetch the same files once per measure; coarser
ones (one per model) would leave a cluster's nodes idle on a study of few models. A dataset's ImageNet-E edits and every model's
eval of the edited folder make one job of their own (`edits--<dataset>`): the folder those evals
read is written by the job that reads it, so the tasks of a plain Slurm array, which start
together, need no dependency between them.

A job writes its runs into a store on its node's local disk (SQLite must never be written over NFS:
its locking is unreliable there) and, when it ends, copies that store whole into the study's jobs
folder (`OUT/jobs/<job>.db`); one process then merges the job stores into the study's store. A
preempted job first saves its store so far (`OUT/jobs/<job>.partial.db`); a job that starts again
begins from the newest of its local store, its saved one and its finished one, so no step it
finished runs twice (and a challenge continues from its stored verdicts).

Over a plain Slurm array (or any scheduler), `bgbench study FILE --shard K/N` runs shard K's jobs and
`bgbench study FILE --merge` merges the job stores into the study's store and writes the report.
The shares come from the study file alone (the jobs of a plan made without any store, every K-th
of them for shard K): every task of an array computes its share itself, at the same moment, so the
shares must not depend on which task runs first or on what a store holds. A shard run again resumes
from its jobs' stores: what they hold does not run twice.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Set

from ..console import status
from ..data.owned import safe_name
from ..data.shards import Shard, select
from ..errors import BgbenchError
from ..store import Store
from ..store.core import default_db_path
from ..store.merge import MergeCount, copy_store, merge_store
from .plan import Step, edited_dataset, plan
from .runner import refuse_problems, run_study
from .spec import EDITS, Study

#: The environment variable naming the node-local folder a job's store is written in (else
#: $SLURM_TMPDIR, $TMPDIR, the system's temporary folder).
SCRATCH_ENV = "BGBENCH_JOB_SCRATCH"


@dataclass(frozen=True)
class Job:
    """A group of a study's steps that run together: one model on one dataset (`model` its label),
    or a dataset's edits and every model's eval of them (`model` None)."""

    name: str
    model: Optional[str]
    dataset: str
    steps: tuple  # the titles of its steps, in plan order

    def to_dict(self) -> dict:
        return {"job": self.name, "model": self.model, "dataset": self.dataset, "steps": list(self.steps)}


def job_name(model: Optional[str], dataset: str) -> str:
    """A job's name, one safe file name: `<model>--<dataset>`, `edits--<dataset>`."""
    return f"{safe_name(model) if model is not None else EDITS}--{safe_name(dataset)}"


def plan_jobs(study: Study, steps: Sequence[Step]) -> List[Job]:
    """The study's jobs in plan order, each with the steps it can run (a step the data cannot
    support is left out; a job left with none is not made)."""
    base = {edited_dataset(study, d).label: d.label for d in study.datasets}
    groups: dict = {}
    for step in steps:
        if step.skip is not None:
            continue
        if step.model is None or step.after_edits:
            key = (None, base.get(step.dataset.label, step.dataset.label))
        else:
            key = (step.model.label, step.dataset.label)
        groups.setdefault(key, []).append(step.title)
    return [Job(job_name(model, dataset), model, dataset, tuple(titles)) for (model, dataset), titles in groups.items()]


def job_study(study: Study, job: Job) -> Study:
    """The study a job runs: its model (every model, for an edits job) on its dataset, with the
    measures of its kind; labels, options and the report's folder are the study's own."""
    datasets = [d for d in study.datasets if d.label == job.dataset]
    if job.model is None:
        return Study(list(study.models), datasets, [m for m in study.measures if m.name == EDITS], study.source,
                     study.out)
    return Study([m for m in study.models if m.label == job.model], datasets,
                 [m for m in study.measures if m.name != EDITS], study.source, study.out)


def jobs_folder(study: Study) -> Path:
    """Where the job stores (and the ids of submitted jobs) are kept: OUT/jobs/, beside the report."""
    return study.out / "jobs"


def scratch_folder() -> Path:
    """The node's local disk, where a running job's store lives."""
    given = next((os.environ[name] for name in (SCRATCH_ENV, "SLURM_TMPDIR", "TMPDIR") if os.environ.get(name)), None)
    return Path(given).expanduser() if given else Path(tempfile.gettempdir())


def local_store(study: Study, job: Job) -> Path:
    """The job's store on local disk, named after the study's jobs folder too (two studies' jobs
    on one node never share a file)."""
    key = hashlib.sha256(str(jobs_folder(study).resolve()).encode()).hexdigest()[:10]
    return scratch_folder() / f"bgbench-{key}-{job.name}.db"


def finished_store(study: Study, job: Job) -> Path:
    return jobs_folder(study) / f"{job.name}.db"


def partial_store(study: Study, job: Job) -> Path:
    return jobs_folder(study) / f"{job.name}.partial.db"


def run_job(study: Study, job: Job, *, device: str = "cpu", progress: bool = False, only: Optional[Set[str]] = None,
            pictures: Optional[Path] = None) -> dict:
    """Run a job's steps that its own store lacks (of `only`, when given: the steps the study's store
    lacks) into its local store, then copy that store whole into the jobs folder. Returns what it
    did: {job, ran, store}."""
    local = local_store(study, job)
    local.parent.mkdir(parents=True, exist_ok=True)
    if not local.exists():  # a job started again on another node: its saved store, else its finished one
        for saved in (partial_store(study, job), finished_store(study, job)):
            if saved.is_file():
                shutil.copyfile(saved, local)
                break
    wanted = set(job.steps) if only is None else set(job.steps) & set(only)
    result = run_study(job_study(study, job), local, device=device, progress=progress, report=False, only=wanted,
                       pictures=pictures)
    copy_store(local, finished_store(study, job))
    partial_store(study, job).unlink(missing_ok=True)
    for path in (local, local.with_name(local.name + "-wal"), local.with_name(local.name + "-shm")):
        path.unlink(missing_ok=True)
    return {"job": job.name, "ran": len(result.ran) if result is not None else 0,
            "store": str(finished_store(study, job))}


def save_partial(study: Study, job: Job) -> Optional[Path]:
    """A preempted job's store so far, copied into the jobs folder (None: it had not begun one)."""
    local = local_store(study, job)
    if not local.is_file():
        return None
    copy_store(local, partial_store(study, job))
    return partial_store(study, job)


def warn_if_network_store(study: Study, db: Optional[str | Path] = None) -> None:
    """One warning line (stderr) when the study's store is on a network file system (the mount's
    type), naming where a job's own store goes instead."""
    from ..store.mounts import network_filesystem
    path = Path(db).expanduser() if db else default_db_path()
    kind = network_filesystem(path)
    if kind is not None:
        status(f"warning: the results store {path} is on {kind}, a network file system, where SQLite's locking is "
               f"unreliable: never let two machines write it; with --executor or --shard K/N each job writes its "
               f"own store on its node's local disk ({scratch_folder()}/bgbench-*-<job>.db), moved whole to "
               f"{jobs_folder(study)}/<job>.db, and one process merges them into it")


@dataclass
class ShardResult:
    """What a shard did: its jobs (every K-th of the study's), and the steps each ran."""

    shard: Shard
    jobs: List[Job]
    total: int
    done: List[dict] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"shard": str(self.shard), "jobs": [j.to_dict() for j in self.jobs], "of_jobs": self.total,
                "done": self.done, "seconds": round(self.seconds, 1)}

    def text(self) -> str:
        lines = [f"shard {self.shard}: {len(self.jobs)} of the study's {self.total} jobs"]
        lines += [f"  {d['job']}: {d['ran']} steps ran -> {d['store']}" for d in self.done]
        lines.append(f"merge the shards with `bgbench study FILE --merge` ({self.seconds:.0f}s)")
        return "\n".join(lines)


def study_jobs(study: Study) -> List[Job]:
    """The study's jobs, from the study file alone (planned without a store), every step a problem
    refused first (one line, before any job runs)."""
    with Store(":memory:") as empty:
        steps = plan(study, empty)
    refuse_problems(study, steps)
    return plan_jobs(study, steps)


def pictures_folder(db: Optional[str | Path]) -> Path:
    """Where the probes' pictures go: beside the study's store, as a single command's do (a job's
    own store is on a node's local disk)."""
    return (Path(db).expanduser() if db else default_db_path()).parent / "pictures"


def run_shard(study: Study, shard: Shard, db: Optional[str | Path] = None, *, device: str = "cpu",
              progress: bool = True) -> ShardResult:
    """Run shard K of N of the study's jobs, each into its own store in the jobs folder."""
    t0 = time.time()
    jobs = study_jobs(study)
    mine = select(jobs, shard)
    result = ShardResult(shard, mine, len(jobs))
    for i, job in enumerate(mine, 1):
        status(f"[job {i}/{len(mine)}] {job.name}: {len(job.steps)} steps")
        result.done.append(run_job(study, job, device=device, progress=progress, pictures=pictures_folder(db)))
    result.seconds = time.time() - t0
    return result


def job_stores(study: Study) -> List[Path]:
    """The finished job stores in the study's jobs folder (not a preempted job's partial one)."""
    return sorted(p for p in jobs_folder(study).glob("*.db") if not p.name.endswith(".partial.db"))  # none: no folder


def merge_job_store(store: Store, path: Path) -> MergeCount:
    """Merge a finished job store into the study's: read from a copy on local disk (the jobs folder
    may be on NFS, where SQLite's locks are unreliable); merging one twice adds nothing."""
    with tempfile.TemporaryDirectory(prefix="bgbench-merge-") as tmp:
        local = Path(tmp) / path.name
        shutil.copyfile(path, local)
        return merge_store(store, local, str(path))


def merge_jobs(study: Study, db: Optional[str | Path] = None) -> List[MergeCount]:
    """Merge every finished job store of the study into its store (`--merge`), in the plan's order
    (so the runs are numbered as one process would number them), then any other store there."""
    order = {job.name: i for i, job in enumerate(study_jobs(study))}
    paths = sorted(job_stores(study), key=lambda p: (order.get(p.stem, len(order)), p.name))
    if not paths:
        raise BgbenchError(f"{study.source}: no job stores in {jobs_folder(study)}; run the shards first "
                           f"(`bgbench study FILE --shard K/N` for K = 0..N-1)")
    with Store(db) as store:
        return [merge_job_store(store, p) for p in paths]
