"""Studies: many models on many datasets under many measures, from one file, resumably.

`bgbench study STUDY.toml` and `bgbench profile --model M --data D` both come here: `spec` reads
and checks the study, `plan` finds what the results store already holds, `runner` runs the rest
through the API (the single commands' path) and writes the report, which opens with a scorecard.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from .spec import Study, load_study, profile_study, study_from_dict


def study(source: "str | Path | Dict[str, Any] | Study", db: Optional[str | Path] = None, *,
          out: Optional[str | Path] = None, dry_run: bool = False, device: str = "cpu", progress: bool = True,
          executor: Optional[str] = None, jobs: Optional[int] = None):
    """Run a study: a TOML file's path, the same structure as a dict (relative paths from the
    working directory), or a `Study`. Every (model, dataset, measure) step the results store `db`
    does not hold yet runs and is recorded; then the report is written to the study's `out`.

    Returns a `StudyResult` (its steps, the runs made, the report's folder); None on torchrun
    ranks other than 0. `dry_run`: the plan only (each step, whether it is done, its cost).

    `executor` ('local' or 'slurm', else the study's [executor] kind) submits the study's jobs
    through submitit, `jobs` at once, with the [executor] table's Slurm resources, and returns a
    `ClusterResult` (`.study` is the `StudyResult`; `.failed` the jobs that failed).
    """
    from .jobs import warn_if_network_store
    from .runner import run_study
    if isinstance(source, Study):
        spec = source
    elif isinstance(source, dict):
        spec = study_from_dict(source, out=out)
    else:
        spec = load_study(source, out=out)
    warn_if_network_store(spec, db)
    from .executor import with_flags
    settings = with_flags(spec.executor, {"kind": executor, "jobs": jobs})
    if settings.kind is not None and not dry_run:
        from .cluster import run_cluster
        return run_cluster(spec, db, settings, device=device, progress=progress)
    return run_study(spec, db, dry_run=dry_run, device=device, progress=progress)


__all__ = ["Study", "load_study", "profile_study", "study", "study_from_dict"]
