"""What the shortcut measures cost at real size: forwards and wall time per measure, beside eval's.

An ImageNet-style val is written once (real ImageNet val file names and classes from the
imagenet-x package's annotations, so ImageNet-X runs on it; JPEG images of random sides around
ImageNet's, 333-500 px, read as Resize(256) + CenterCrop(224)), with a Stylized copy and an
ImageNet-R-style folder of the same classes (`tests/helpers/imagenet_val.py`, the tests' writer).
A random-init 1000-class `--arch` (ResNet-50 by default) then runs, each timed once after a
warm-up: eval of the val, and the watermark, texture, renditions and imagenet_x measures.

    PYTHONPATH=src:tests python benchmarks/shortcut_cost.py [--per-class 25] [--classes 12] [--arch resnet50]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from bgbench import evaluate, probe
from bgbench.models import create_model
from helpers import imagenet_val

MEASURES = ("watermark", "texture", "renditions", "imagenet_x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="/tmp/bgbench-shortcut-cost")
    p.add_argument("--per-class", type=int, default=25)
    p.add_argument("--classes", type=int, default=12, help="ImageNet classes (the first of every 80)")
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    out = Path(args.out)
    classes = [80 * k + 1 for k in range(args.classes)]
    if not (out / "val").is_dir():
        imagenet_val.write_val(out / "val", per_class=args.per_class, classes=classes, sides=(333, 500))
        imagenet_val.write_class_folders(out / "r", classes=classes, per_class=args.per_class, sides=(333, 500))
        imagenet_val.write_stylized(out / "sin", out / "val")
    model = create_model(f"timm:{args.arch}", num_classes=1000)
    data = str(out / "val")
    evaluate(model, data, progress=False, batch_size=args.batch_size)  # warm-up: decode caches, first forward
    n = args.per_class * args.classes
    rows = []
    t = time.perf_counter()
    evaluate(model, data, progress=False, batch_size=args.batch_size)
    base = time.perf_counter() - t
    rows.append(("eval (ImageNet val)", n, base))
    options = {"texture": {"stylized": str(out / "sin")}, "renditions": {"renditions": str(out / "r")}}
    for name in MEASURES:
        t = time.perf_counter()
        probe(name, model, data, progress=False, batch_size=args.batch_size, **options.get(name, {}))
        rows.append((name, 2 * n if name != "imagenet_x" else n, time.perf_counter() - t))
    print(f"{args.arch} (random init, 1000 classes), {n} val images ({args.classes} classes), 224-px crops of "
          f"333-500 px JPEG, batch {args.batch_size}, {torch.get_num_threads()} threads")
    print("| measure | forwards | wall time | per forward | vs eval's per-image time |")
    print("|---|---|---|---|---|")
    for name, forwards, seconds in rows:
        print(f"| {name} | {forwards} | {seconds:.1f} s | {1000 * seconds / forwards:.1f} ms | "
              f"{(seconds / forwards) / (base / n):.2f}x |")


if __name__ == "__main__":
    main()
