"""Last-layer retraining (DFR) against full training, on Synthetic-9 at demo scale, in one run.

Two tables:
1. **A controlled shortcut.** For each correlation P (`bgbench synth --correlation P`: a share P
   of each class's training images on its own class's background family, the rest on the others),
   ERM trains timm:test_resnet on ORIGINAL; DFR then refits its last layer on a held-out set whose
   groups (class x background family) are balanced (P = 1/9). Both are evaluated on a third,
   balanced test set: worst-group and mean accuracy on ORIGINAL, by (class, background family).
2. **Minutes, not hours.** On the demo's data (background correlation 0.95), the ORIGINAL-trained
   model, then DFR on the train split's MIXED-RAND against full training on MIXED-RAND of the
   same architecture: wall time of each, and the BG-Gap and MIXED-RAND accuracy each reaches.

    PYTHONPATH=src python benchmarks/dfr.py [--out /tmp/bgbench-dfr] [--correlations 0.5 0.9 0.98]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from bgbench.api import evaluate, train
from bgbench.variants.synth import write_dataset

ARCH = "timm:test_resnet"
BALANCED = 1 / 9  # every (class, background family) group equally large


def _pct(e) -> str:
    return f"{100 * e:5.1f}%"


def _groups(report, variant="original"):
    """(worst-group, mean-group, minority) accuracy: minority pools the images on another class's
    background family (8 of the 9 groups of each class)."""
    g = report.groups[variant]
    off = [r for r in g.groups if r["class"] != r["background"]]
    minority = sum(r["correct"] for r in off) / sum(r["n"] for r in off)
    return g.worst["acc"] if g.worst else float("nan"), g.mean, minority


def shortcut_table(out: Path, args) -> None:
    held, test = out / "heldout", out / "test"
    write_dataset(held, per_class=args.group_images * 9, size=args.size, seed=1, split="val", progress=False,
                  overwrite=True, correlation=BALANCED)
    write_dataset(test, per_class=args.group_images * 9, size=args.size, seed=2, split="val", progress=False,
                  overwrite=True, correlation=BALANCED)
    print("| P | ERM worst-group | ERM mean-group | ERM minority | DFR worst-group | DFR mean-group | DFR minority |")
    print("|---|---|---|---|---|---|---|")
    for p in args.correlations:
        data = out / f"train-p{p}"
        write_dataset(data, per_class=args.per_class, size=args.size, seed=0, split="train", progress=False,
                      overwrite=True, correlation=p)
        erm = train(data, out / f"erm-p{p}", model=ARCH, epochs=args.epochs, progress=False)
        dfr = train(held, out / f"dfr-p{p}", model=f"file:{erm['checkpoint']}", recipe="dfr", split="val",
                    variant="original", feature_cache=str(out / "cache"), progress=False)
        rows = []
        for ckpt in (erm["checkpoint"], dfr["checkpoint"]):
            rows += _groups(evaluate(f"file:{ckpt}", test, variants=["original"], progress=False))
        print(f"| {p} | " + " | ".join(_pct(v) for v in rows) + " |", flush=True)


def minutes_table(out: Path, args) -> None:
    data = out / "demo-data"
    write_dataset(data, per_class=args.per_class, size=args.size, seed=0, split="train", progress=False,
                  overwrite=True)
    write_dataset(data, per_class=50, size=args.size, seed=0, split="val", progress=False, overwrite=True)
    original = train(data, out / "original", model=ARCH, epochs=args.epochs, progress=False)
    t0 = time.perf_counter()
    dfr = train(data, out / "dfr-mixed-rand", model=f"file:{original['checkpoint']}", recipe="dfr",
                feature_cache="none", progress=False)
    t_dfr = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = train(data, out / "mixed-rand", model=ARCH, variant="mixed_rand", epochs=args.epochs, progress=False)
    t_full = time.perf_counter() - t0
    print("\n| model | wall time | BG-Gap [95% CI] | MIXED-RAND acc | worst group (MIXED-RAND) |")
    print("|---|---|---|---|---|")
    for name, result, seconds in (("ORIGINAL-trained", original, None), ("+ DFR on MIXED-RAND", dfr, t_dfr),
                                  ("trained on MIXED-RAND", full, t_full)):
        r = evaluate(f"file:{result['checkpoint']}", data, variants=["mixed_same", "mixed_rand"], progress=False)
        g = r.groups.get("mixed_rand")
        worst = _pct(g.worst["acc"]) if g is not None and g.worst else "–"
        when = f"{seconds:.1f} s" if seconds is not None else "(trained before)"
        print(f"| {name} | {when} | {_pct(r.bg_gap.value)} [{_pct(r.bg_gap.lo)}, {_pct(r.bg_gap.hi)}] | "
              f"{_pct(r.accuracy['mixed_rand'].value)} | {worst} |", flush=True)
    print(f"\nDFR / full MIXED-RAND training wall time: {t_dfr / t_full:.3f} ({t_dfr:.1f} s vs {t_full:.1f} s, "
          f"{args.epochs} epochs, {torch.get_num_threads()} torch threads)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/bgbench-dfr")
    ap.add_argument("--correlations", type=float, nargs="+", default=[0.5, 0.9, 0.98])
    ap.add_argument("--per-class", type=int, default=150, help="training images per class")
    ap.add_argument("--group-images", type=int, default=10, help="images per group of the held-out and test sets")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip", choices=("shortcut", "minutes"), help="leave one table out")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    if args.skip != "shortcut":
        shortcut_table(out, args)
    if args.skip != "minutes":
        minutes_table(out, args)


if __name__ == "__main__":
    main()
