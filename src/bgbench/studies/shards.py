"""A study over a plain Slurm array (or any scheduler): `bgbench study FILE --shard K/N` runs shard K's
jobs, each into its own store (`jobs`), and `bgbench study FILE --merge` merges the job stores into
the study's store and writes the report.

Why the shares come from the study file alone (the jobs of a plan made without any store, every K-th
of them for shard K): every task of an array computes its share itself, at the same moment, so the
shares must not depend on which task runs first or on what a store holds. A shard run again resumes
from its jobs' stores: what they hold does not run twice.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from ..console import status
from ..data.shards import Shard, select
from ..errors import BgbenchError
from ..store import Store
from ..store.core import default_db_path
from ..store.merge import MergeCount, merge_store
from .jobs import Job, jobs_folder, plan_jobs, run_job
from .plan import plan
from .runner import refuse_problems
from .spec import Study


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
