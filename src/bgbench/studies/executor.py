"""How a study's jobs are submitted: the study file's `[executor]` table and the command's flags
(a flag wins), checked whole before anything is submitted.

    [executor]
    kind = "slurm"          # or "local": the same jobs as processes on this machine
    jobs = 8                # at most this many at once (Slurm: the array's parallelism)
    partition = "gpu"
    gpus_per_job = 1
    cpus_per_job = 8
    time = 240              # minutes; a job past it is requeued and resumes from its store
    sbatch = { account = "lab", qos = "high" }   # any other sbatch option

Kept apart from the submitting (`cluster`) so that reading a study file never imports submitit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, Optional

from ..errors import BgbenchError
from ..options import flag

KINDS = ("local", "slurm")
#: A job's time limit without `time`: a day (Slurm's partitions cap it further).
DEFAULT_MINUTES = 24 * 60


@dataclass
class ExecutorSettings:
    """What submitit needs: the executor's kind, how many jobs at once, and the Slurm resources; each
    field is also its flag, which overrides the study file's [executor] table."""

    kind: Optional[str] = field(default=None, metadata=flag(
        "--executor", "submit the study's jobs through submitit: as processes on this machine, or to Slurm; this "
        "process merges each job's store as it ends (default: the study's [executor] kind, else none)",
        choices=KINDS, dest="executor"))
    jobs: Optional[int] = field(default=None, metadata=flag(
        "--jobs", "jobs running at once (Slurm: the array's parallelism)", type=int, metavar="N"))
    partition: Optional[str] = field(default=None, metadata=flag("--partition", "Slurm partition"))
    gpus_per_job: Optional[int] = field(default=None, metadata=flag("--gpus-per-job", "GPUs per job", type=int,
                                                                    metavar="G"))
    cpus_per_job: Optional[int] = field(default=None, metadata=flag("--cpus-per-job", "CPUs per job", type=int,
                                                                    metavar="C"))
    time: Optional[int] = field(default=None, metadata=flag(
        "--time", "a job's time limit in minutes (it is requeued when it passes it, and resumes)", type=int,
        metavar="MIN"))
    sbatch: Dict[str, Any] = field(default_factory=dict, metadata=flag(
        "--sbatch", "another sbatch option (--sbatch account=lab --sbatch qos=high), repeatable", action="append",
        metavar="KEY=VALUE", default=None))


_INTS = ("jobs", "gpus_per_job", "cpus_per_job", "time")
#: An sbatch option's name: submitit writes it unquoted into an `#SBATCH --KEY=VALUE` line.
_OPTION = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
#: Refused in a value even though submitit quotes values: a newline ends the `#SBATCH` comment and
#: the rest of the value becomes a line of the job's script, and no sbatch option needs shell syntax.
_SHELL = frozenset("`$;\\'\"<>")


def script_hazard(text: str) -> Optional[str]:
    """Why `text` may not go into a generated job script (a newline, a control character or shell
    syntax), or None when it may."""
    for ch in text:
        if ch in "\n\r" or not ch.isprintable():
            return f"it holds a newline or control character ({ch!r})"
        if ch in _SHELL:
            return f"it holds shell syntax ({ch!r})"
    return None


def executor_table(table: Any, source: str) -> ExecutorSettings:
    """The study file's [executor] table, checked (one line naming the key)."""
    if not isinstance(table, dict):
        raise BgbenchError(f"{source}: executor: a table ([executor]) of "
                           f"{', '.join(f.name for f in fields(ExecutorSettings))}")
    names = [f.name for f in fields(ExecutorSettings)]
    for key in table:
        if key not in names:
            raise BgbenchError(f"{source}: executor.{key}: not an executor setting; they are {', '.join(names)}")
    settings = ExecutorSettings(**table)
    check(settings, lambda key: f"{source}: executor.{key}")
    return settings


def check(settings: ExecutorSettings, name) -> None:
    """Every value by type and range; `name(key)` says where it came from in the error."""
    if settings.kind is not None and settings.kind not in KINDS:
        raise BgbenchError(f"{name('kind')}: {settings.kind!r} is not one of {', '.join(KINDS)}")
    for key in _INTS:
        value = getattr(settings, key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or
                                  value < (0 if key == "gpus_per_job" else 1)):
            raise BgbenchError(f"{name(key)}: expected a whole number of at least "
                               f"{0 if key == 'gpus_per_job' else 1}, got {value!r}")
    if settings.partition is not None and not isinstance(settings.partition, str):
        raise BgbenchError(f"{name('partition')}: expected a partition's name, got {settings.partition!r}")
    if settings.partition is not None and script_hazard(settings.partition):
        raise BgbenchError(f"{name('partition')}: {settings.partition!r} is not a partition's name: "
                           f"{script_hazard(settings.partition)}")
    if not isinstance(settings.sbatch, dict):
        raise BgbenchError(f"{name('sbatch')}: a table of sbatch options (sbatch = {{ account = \"lab\" }})")
    for key, value in settings.sbatch.items():
        if not isinstance(key, str) or not _OPTION.fullmatch(key):
            raise BgbenchError(f"{name('sbatch')}: {key!r} is not an sbatch option's name (letters, digits, "
                               f"'-' and '_', e.g. account or mail_user)")
        if isinstance(value, bool) and value is not True or not isinstance(value, (str, int, float)):
            raise BgbenchError(f"{name('sbatch')}.{key}: expected a string or a number (or true for a bare "
                               f"flag), got {value!r}")
        why = script_hazard(str(value))
        if why:
            raise BgbenchError(f"{name('sbatch')}.{key}: {value!r} cannot go into the job script: {why}")


def with_flags(settings: ExecutorSettings, flags: Dict[str, Any]) -> ExecutorSettings:
    """The file's settings with the flags given on the command line put over them (None: not given);
    `sbatch` flags are KEY=VALUE strings added to the file's table."""
    out = replace(settings, sbatch=dict(settings.sbatch))
    for key, value in flags.items():
        if value is None:
            continue
        if key == "sbatch":
            for item in value:
                option, sep, setting = item.partition("=")
                if not sep or not option.strip():
                    raise BgbenchError(f"--sbatch {item!r}: expected KEY=VALUE (an sbatch option without its "
                                       f"dashes, e.g. account=lab)")
                out.sbatch[option.strip().lstrip("-").replace("-", "_")] = setting
        else:
            setattr(out, key, value)
    check(out, lambda key: f"--{key.replace('_', '-')}")
    return out
