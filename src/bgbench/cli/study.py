"""`bgbench study STUDY.toml`: every (model, dataset, measure) step of a study file that the results
store does not hold yet, then the report; `--dry-run` prints the plan. Across machines: `--shard K/N`
and `--merge` (any scheduler), or `--executor local|slurm` (submitit)."""
from __future__ import annotations

import argparse

from ..console import status
from ..studies.executor import ExecutorSettings
from .arguments import add_config_flags, add_device_arg, add_output_args
from .output import emit


def register(sub) -> None:
    p = sub.add_parser("study", help="run a study file (models x datasets x measures), resumably, and write its "
                                     "report; rerunning it runs only what the store lacks")
    p.add_argument("file", metavar="STUDY.toml", help="the study: models, datasets, [measures.NAME] tables of options")
    p.add_argument("--out", help="the report's folder (default: the study's [report] out, else STUDY-report/ beside "
                                 "the file)")
    add_study_args(p)
    cluster = p.add_argument_group("across machines (each job writes its own store, merged into --db)")
    cluster.add_argument("--shard", metavar="K/N",
                         help="run only shard K of N of the study's jobs (one per model and dataset), each into its "
                              "own store in OUT/jobs/; K counts from 0 (0 <= K < N: 0/2 and 1/2 are the two "
                              "halves), as a Slurm array's $SLURM_ARRAY_TASK_ID does with --array=0-(N-1)")
    cluster.add_argument("--merge", action="store_true",
                         help="merge the job stores in OUT/jobs/ into the store and write the report")
    add_config_flags(cluster, ExecutorSettings)


def add_study_args(p) -> None:
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (each step, whether the store holds it, its cost in forwards) and run nothing")
    add_device_arg(p)
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    from ..studies import load_study
    spec = load_study(args.file, out=args.out)
    chosen = [flag for flag, on in (("--shard", args.shard), ("--merge", args.merge), ("--dry-run", args.dry_run),
                                    ("--executor", args.executor)) if on]
    if len(chosen) > 1 and chosen != ["--dry-run", "--executor"]:  # a dry run shows the jobs it would submit
        from ..errors import BgbenchError
        raise BgbenchError(f"{' and '.join(chosen)}: choose one")
    if args.shard:
        from ..data.shards import Shard
        from ..studies.jobs import run_shard
        result = run_shard(spec, Shard.parse(args.shard), args.db, device=args.device, progress=not args.quiet)
        return emit(args, result.to_dict(), result.text())
    from ..studies.jobs import warn_if_network_store
    warn_if_network_store(spec, args.db)
    if args.merge:
        from ..studies.runner import run_study
        from ..studies.jobs import merge_jobs
        counts = merge_jobs(spec, args.db)
        for c in counts:
            status(f"merged {c.text()}")
        result = run_study(spec, args.db, device=args.device, progress=False, execute=False)
        if result.missing:
            status(f"warning: {len(result.missing)} steps are in no job store yet (first: {result.missing[0]}); did "
                   f"every shard finish? Run the missing shards again, then --merge")
        return emit(args, {**result.to_dict(), "merged": [c.to_dict() for c in counts]}, result.text())
    from ..studies.cluster import executor_settings, run_cluster
    settings = executor_settings(spec, args)
    if settings is not None and not args.dry_run:
        result = run_cluster(spec, args.db, settings, device=args.device, progress=not args.quiet)
        emit(args, result.to_dict(), result.text())
        return 0 if result.complete else 1
    return run_spec(args, spec)


def run_spec(args: argparse.Namespace, spec) -> int:
    from ..studies.runner import plan_table, run_study
    result = run_study(spec, args.db, dry_run=args.dry_run, device=args.device, progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0
        return 0
    if not args.dry_run or not hasattr(args, "executor"):  # `profile` has no jobs to show
        return emit(args, result.to_dict(), plan_table(result.steps) if args.dry_run else result.text())
    from ..studies.jobs import plan_jobs
    jobs = plan_jobs(spec, result.steps)  # what --shard and --executor would spread over machines
    missing = set(result.missing)
    lines = [plan_table(result.steps), f"{len(jobs)} jobs for --executor or --shard K/N (one per model and dataset; "
             f"a dataset's edits one), {sum(bool(missing & set(j.steps)) for j in jobs)} with steps to run:"]
    lines += [f"  {j.name}: {len(j.steps)} steps" for j in jobs]
    return emit(args, {**result.to_dict(), "jobs": [j.to_dict() for j in jobs]}, "\n".join(lines))
