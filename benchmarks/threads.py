"""Torch CPU threads on a loaded machine: wall and CPU seconds of the same training (timm:test_resnet,
10 epochs over 180 Synthetic-9 images at 64 px, batch 32) with 1 and with 2 threads, alternated
`--repeats` times, each beside the machine's 1-minute load average when it ended.

What it decides: `distributed.cpu_threads` gives a job one thread when fewer than two cores are
idle. Run it once on a busy machine and once on an idle one:

    PYTHONPATH=src python benchmarks/threads.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOB = """
import sys, time
from bgbench.training import TrainConfig, train
t0, c0 = time.time(), time.process_time()
train(TrainConfig(data=sys.argv[2], variant="original", model="timm:test_resnet", out=sys.argv[3], epochs=10,
                  batch_size=32, split="train", threads=int(sys.argv[1])), progress=False)
print(round(time.time() - t0, 1), round(time.process_time() - c0, 1))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bgbench-threads-"))
    from bgbench.variants.synth import write_dataset
    write_dataset(work / "data", per_class=20, size=64, seed=0, split="train", progress=False)
    env = {k: v for k, v in os.environ.items() if k not in ("BGBENCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    print(f"{os.cpu_count()} cores; threads, wall s, CPU s, load average after")
    for k in range(args.repeats):
        for threads in (1, 2):
            out = work / f"run-{threads}-{k}"
            proc = subprocess.run([sys.executable, "-c", JOB, str(threads), str(work / "data"), str(out)],
                                  capture_output=True, text=True, env=env, check=True)
            wall, cpu = proc.stdout.split()
            print(f"{threads}  {wall:>6}  {cpu:>6}  {os.getloadavg()[0]:.1f}", flush=True)
            time.sleep(1)


if __name__ == "__main__":
    main()
