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

3. **`--rate`, instead of the tables:** DFR's feature extraction (decode ahead, the frozen
   backbone's penultimate features, copied to the CPU: what `--recipe dfr` runs before its fit,
   uncached) in images/s, against the same network's pure `pre_logits` forward on pre-decoded
   batches, on the real-size JPEG set of `realsize_data.py` (every variant; `--per-class`, `--size`)
   and a random-init `--arch` on `--device`.

    PYTHONPATH=src python benchmarks/dfr.py [--out /tmp/bgbench-dfr] [--correlations 0.5 0.9 0.98]
    PYTHONPATH=src:benchmarks python benchmarks/dfr.py --rate --arch resnet50 --per-class 50 --size 224 \
        --device cuda --batch-size 240 --json dfr.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from bgbench.evaluation.numerics import strict_fp32

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


def rate_table(args) -> dict:
    """Images/s of DFR's feature extraction against a pure `pre_logits` forward of the same network."""
    from realsize_data import realsize_dataset
    from bgbench.data.images import decode_image
    from bgbench.data.in9 import discover
    from bgbench.distributed import Ranks
    from bgbench.evaluation.predict import to_tensor
    from bgbench.models import create_model
    from bgbench.models.heads import pre_logits
    from bgbench.training.last_layer import penultimate_features
    layout = discover(realsize_dataset(per_class=args.per_class, size=args.size))
    items = [it for v in layout.variants for it in layout.items(v)]
    torch.manual_seed(0)
    model = create_model(f"timm:{args.arch}", num_classes=9).eval().to(args.device)
    batches = [to_tensor(np.stack([decode_image(it.path) for it in items[i:i + args.batch_size]]), args.device)
               for i in range(0, len(items), args.batch_size)]

    def synced() -> float:  # GPU work is asynchronous: a time is taken once it has finished
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()

    def extract() -> None:
        penultimate_features(model, items, "rate", Ranks(device=args.device), None, args.batch_size, progress=False)

    def forward() -> None:
        with torch.inference_mode(), strict_fp32():  # DFR's features are strict fp32 too
            for x in batches:
                pre_logits(model, x)
    times = {"extraction": [], "forward": []}
    for rep in range(args.repeats + 1):  # the first round warms up (cuDNN's choices, caches) and is not kept
        for name, fn in (("extraction", extract), ("forward", forward)):
            t = synced()
            fn()
            times[name].append(synced() - t)
    n = len(items)
    figures = {"arch": args.arch, "images": n, "size": args.size, "batch_size": args.batch_size,
               "device": args.device, "extraction": n / min(times["extraction"][1:]),
               "forward": n / min(times["forward"][1:])}
    figures["ratio"] = figures["extraction"] / figures["forward"]
    print(f"DFR feature extraction: {figures['extraction']:.1f} images/s, pure pre_logits forward "
          f"{figures['forward']:.1f} images/s, ratio {figures['ratio']:.3f} ({n} images, {args.size} px JPEG, "
          f"{args.arch}, batch {args.batch_size}, {args.device})")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return figures


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
    ap.add_argument("--rate", action="store_true", help="time DFR's feature extraction instead of the tables")
    ap.add_argument("--arch", default="resnet50", help="--rate: a timm architecture, random init (default %(default)s)")
    ap.add_argument("--device", default="cpu", help="--rate: torch device (default %(default)s)")
    ap.add_argument("--batch-size", type=int, default=64, help="--rate: images per forward (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=2, help="--rate: timed rounds, the best kept (default %(default)s)")
    ap.add_argument("--json", metavar="FILE", help="--rate: also write the figures to FILE as JSON")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.rate:
        rate_table(args)
        return
    out = Path(args.out)
    if args.skip != "shortcut":
        shortcut_table(out, args)
    if args.skip != "minutes":
        minutes_table(out, args)


if __name__ == "__main__":
    main()
