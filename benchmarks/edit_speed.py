"""Edited images/s of `bgbench edit` with 1 and 2 workers, the scaling ratio, and its ceiling.

A Synthetic-9 split (64 px by default) is edited at every CPU level (remove, 4 sizes, position,
rotation, complexity -20 and 20; no model, so no adversarial level). The whole run is timed:
decode, inpainting, warps, the FFT gradient steps, GLCM, PNG writes and pool start-up. Worker
counts are interleaved over `--repeats` runs and the best time of each is kept, so a neighbour's
burst on a shared machine hurts both sides alike. The two outputs are compared byte for byte.
A toy CPU task's 2-process scaling, measured in the same run, is printed as the machine's
ceiling right now (as build_speed.py does). Target: scaling >= 1.7 at 2 workers.

    PYTHONPATH=src python benchmarks/edit_speed.py [--per-class 6] [--size 64] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from build_speed import machine_ceiling  # noqa: E402

from bgbench.variants.synth import write_dataset  # noqa: E402
from bgbench.edits.pipeline import EditConfig, edit_dataset  # noqa: E402


def _cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=6)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_dataset(root / "data", per_class=args.per_class, size=args.size, seed=0, split="val", progress=False)
        best = {1: float("inf"), 2: float("inf")}
        cpu = {1: 0.0, 2: 0.0}
        edited = 0
        ceilings = []
        for _ in range(args.repeats):
            for workers in (1, 2):
                cfg = EditConfig(data=root / "data", out=root / f"out{workers}", workers=workers, overwrite=True)
                c0, t0 = _cpu_seconds(), time.perf_counter()
                result = edit_dataset(cfg, progress=False)
                dt = time.perf_counter() - t0
                if dt < best[workers]:
                    best[workers], cpu[workers] = dt, _cpu_seconds() - c0
                edited = sum(1 for r in result.rows if r.folder != "original")
            ceilings.append(machine_ceiling())
        identical = _tree(root / "out1") == _tree(root / "out2")
    n_images = 9 * args.per_class
    print(f"{n_images} source images at {args.size} px, {edited} edited images per run "
          f"({edited // max(n_images, 1)} levels), best of {args.repeats}; load average {os.getloadavg()[0]:.1f}")
    for w in (1, 2):
        print(f"  {w} worker{'s' if w > 1 else ''}: {best[w]:.2f} s, {edited / best[w]:.1f} edited img/s, "
              f"CPU {cpu[w]:.1f} s")
    print(f"scaling at 2 workers: {best[1] / best[2]:.2f}x (target >= 1.7x)")
    print(f"toy CPU task 2-process scaling (the machine's ceiling now): "
          f"{min(ceilings):.2f}x-{max(ceilings):.2f}x")
    print(f"1-worker and 2-worker outputs byte-identical: {identical}")


if __name__ == "__main__":
    main()
