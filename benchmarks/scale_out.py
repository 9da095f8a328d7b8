"""1 vs 2 torchrun processes for `eval` and the noise probe: images/s, CPU seconds, and the ceiling.

A Synthetic-9 split is evaluated (every variant) and noise-probed with one process and with two
(`torchrun --standalone --nproc-per-node 2`, gloo on the CPU, one torch thread per process). Each
job is timed inside the processes, after imports and model creation, from a barrier to rank 0
holding every row; CPU seconds are summed over the ranks. The rows rank 0 gets from two processes
are compared with those of one (they must be identical). Process counts are interleaved over
`--repeats` runs and the best time of each is kept. A toy CPU task's 2-process scaling, measured in
the same run, is printed as the machine's ceiling right now: on a shared machine a ratio means
nothing without it.

    PYTHONPATH=src python benchmarks/scale_out.py [--per-class 8] [--size 64] [--repeats 2]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from build_speed import machine_ceiling  # noqa: E402

JOBS = ("eval", "noise")


def _digest(rows) -> str:
    return hashlib.sha256(json.dumps(sorted(map(list, rows)), default=str).encode()).hexdigest()[:16]


def _job(job: str, model, data: str, batch: int):
    """Run one job; returns (images processed, a digest of its rows) on rank 0, None elsewhere."""
    from bgbench import api
    if job == "eval":
        report = api.evaluate(model, data, batch_size=batch, progress=False)
        if report is None:
            return None
        rows = [r for v, p in report.predictions.items() for r in p.rows(v)]
        return len(rows), _digest(rows)
    result = api.probe("noise", model, data, levels=[0.1, 0.3], trials=2, batch_size=batch, progress=False)
    return None if result is None else (len({r.image_id for r in result.rows}), _digest(result.rows))


def worker(job: str, data: str, model_name: str, batch: int, result_path: str) -> None:
    """One process of a measured run (under torchrun or alone): time the job, write rank 0's figures."""
    import torch

    from bgbench.distributed import all_reduce, barrier, setup
    from bgbench.models import create_model
    torch.set_num_threads(1)
    ranks = setup("cpu")
    model = create_model(model_name)
    barrier(ranks)
    c0, t0 = time.process_time(), time.perf_counter()
    out = _job(job, model, data, batch)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    (cpu_total,) = all_reduce([cpu], ranks)
    if ranks.main:
        Path(result_path).write_text(json.dumps({"wall": wall, "cpu": cpu_total, "images": out[0],
                                                 "digest": out[1]}))


def _measure(job: str, procs: int, data: Path, model: str, batch: int, tmp: Path) -> dict:
    result = tmp / f"{job}-{procs}.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(procs),
           __file__, "--worker", job, "--data", str(data), "--model", model, "--batch-size", str(batch),
           "--result", str(result)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    return json.loads(result.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=8)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--model", default="timm:resnet18")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--worker", choices=JOBS)
    ap.add_argument("--data")
    ap.add_argument("--result")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.data, args.model, args.batch_size, args.result)
    from bgbench.variants.synth import write_dataset
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_dataset(root / "data", per_class=args.per_class, size=args.size, seed=0, split="val", progress=False)
        best = {(j, p): None for j in JOBS for p in (1, 2)}
        ceilings = []
        for _ in range(args.repeats):
            for job in JOBS:
                for procs in (1, 2):
                    m = _measure(job, procs, root / "data", args.model, args.batch_size, root)
                    if best[job, procs] is None or m["wall"] < best[job, procs]["wall"]:
                        best[job, procs] = m
            ceilings.append(machine_ceiling())
    print(f"{9 * args.per_class} images at {args.size} px, {args.model}, batch {args.batch_size}, one torch thread "
          f"per process, best of {args.repeats}; load average {os.getloadavg()[0]:.1f}")
    for job in JOBS:
        one, two = best[job, 1], best[job, 2]
        what = "predictions (images x variants)" if job == "eval" else "images (x 2 regions x 2 levels x 2 trials)"
        for procs, m in ((1, one), (2, two)):
            print(f"  {job} {procs} proc: {m['wall']:.2f} s, {m['images'] / m['wall']:.1f} {what}/s, CPU {m['cpu']:.1f} s")
        print(f"  {job} scaling at 2 processes: {one['wall'] / two['wall']:.2f}x; rows identical: "
              f"{one['digest'] == two['digest']}")
    print(f"toy CPU task 2-process scaling (the machine's ceiling now): {min(ceilings):.2f}x-{max(ceilings):.2f}x")


if __name__ == "__main__":
    main()
