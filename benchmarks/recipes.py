"""Training recipes on Synthetic-9 at demo scale: accuracy per variant and BG-Gap, one row each.

Trains timm:test_resnet with erm, mixup, cutmix and bgswap, each with and without SWA, on the
ORIGINAL train split (150/class, 64px, strong background correlation), evaluates every model on
the 8 test variants (50/class) with `bgbench.api.evaluate`, prints one table, and checks the
paper's claim in miniature: background swapping shrinks the BG-Gap and raises MIXED-RAND accuracy.

    PYTHONPATH=src python benchmarks/recipes.py [--out /tmp/bgbench-recipes] [--epochs 20] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from bgbench.api import evaluate
from bgbench.variants.synth import write_dataset
from bgbench.training import TrainConfig, list_recipes, train
from bgbench.training.recipes import last_layer_recipes
from bgbench.variants import IN9_VARIANTS

ARCH = "timm:test_resnet"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/bgbench-recipes")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--per-class", type=int, default=150)
    ap.add_argument("--test-per-class", type=int, default=50)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    full = [r for r in list_recipes() if r not in last_layer_recipes()]  # dfr, linear-probe: benchmarks/dfr.py
    ap.add_argument("--recipes", nargs="+", default=full, choices=full)
    ap.add_argument("--no-swa", action="store_true", help="skip the +SWA rows")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1 is several times faster than 2 on a shared 2-core machine)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    out = Path(args.out)
    data = out / "synthetic9"
    if not (data / "original" / "val").is_dir():
        write_dataset(data, per_class=args.per_class, size=args.size, seed=args.seed, split="train", progress=False)
        write_dataset(data, per_class=args.test_per_class, size=args.size, seed=args.seed, split="val",
                      progress=False)
    rows = {}
    for recipe in args.recipes:
        for swa in ([False] if args.no_swa else [False, True]):
            name = recipe + ("+swa" if swa else "")
            t1 = time.time()
            torch.manual_seed(args.seed)
            ckpt = train(TrainConfig(data=str(data), model=ARCH, out=str(out / "runs" / name), epochs=args.epochs,
                                     seed=args.seed, recipe=recipe, swa=swa,
                                     threads=args.threads), progress=False)
            report = evaluate(f"file:{ckpt}", data, progress=False, seed=args.seed)
            rows[name] = {v: e.value for v, e in report.accuracy.items()}
            rows[name]["bg_gap"] = report.bg_gap.value
            print(f"  {name:12s} trained+evaluated in {time.time() - t1:.0f}s", flush=True)
    cols = [v for v in IN9_VARIANTS if v in next(iter(rows.values()))] + ["bg_gap"]
    head = "| recipe | " + " | ".join("BG-Gap" if c == "bg_gap" else c for c in cols) + " |"
    print()
    print(head)
    print("|" + "---|" * (len(cols) + 1))
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{100 * r[c]:.1f}" for c in cols) + " |")
    print()
    checks = []
    for suffix in ("", "+swa"):
        erm, bgs = rows.get("erm" + suffix), rows.get("bgswap" + suffix)
        if erm is None or bgs is None:
            continue
        c1 = bgs["bg_gap"] <= erm["bg_gap"] / 3
        c2 = bgs["mixed_rand"] > erm["mixed_rand"]
        checks += [c1, c2]
        print(f"bgswap{suffix} BG-Gap <= 1/3 of erm{suffix} BG-Gap: {c1} "
              f"({100 * bgs['bg_gap']:.1f} vs {100 * erm['bg_gap']:.1f} / 3 = {100 * erm['bg_gap'] / 3:.1f})")
        print(f"bgswap{suffix} mixed_rand acc > erm{suffix} mixed_rand acc: {c2} "
              f"({100 * bgs['mixed_rand']:.1f} vs {100 * erm['mixed_rand']:.1f})")
    (out / "recipes.json").write_text(json.dumps(rows, indent=1))
    print(f"all checks hold: {all(checks) and bool(checks)}; {len(rows)} models in {time.time() - t0:.0f}s "
          f"(accuracies in %, test split; raw numbers in {out / 'recipes.json'})")


if __name__ == "__main__":
    main()
