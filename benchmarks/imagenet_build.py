"""Images/s per worker of `bgbench build --imagenet` at ImageNet's real size, and the projected hours.

Writes a temporary ILSVRC-layout tree (`ILSVRC/Data/CLS-LOC/val/`, flat, with `LOC_val_solution.csv`
and val XML) of `--images` photographs at ImageNet's typical 500x375, JPEG quality 90: random crops,
flips and colour jitter of three of scikit-image's sample photographs (a cat, a cup, a person), one box
each around the object, spread over one synset of each IN-9 class. It then times, whole run each (listing, decode,
Resize(256)/CenterCrop(224), filters, GrabCut, the 8 variants, PNG writes, balance, donors, tables):

- `--preset in9` with 1 and with 2 workers;
- the two halves a shard array separates: `--shard 0/1` (decode, filters, GrabCut, own variants) and
  `bgbench merge` of it (balance, donors, the three mixed variants), 1 worker each;
- `--preset in9l` (decode, resize, crop, one PNG: no GrabCut) with 1 worker.

Rates are input images per second (every listed image costs its share). The load average is printed
before and after: on a shared machine the 2-worker figure shows what the second core gave, not the
code's scaling. Projections for the real datasets are printed with the per-worker rate.

    python benchmarks/imagenet_build.py [--images 81] [--repeats 1]
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from bgbench.data.shards import read_shards
from bgbench.variants.build import BuildConfig, build, merge
from bgbench.variants.presets import get_preset

W, H = 500, 375  # ImageNet's most common size

#: Input images of the real builds (ImageNet-1k's per-class counts: 50 val, up to 1,300 train):
#: IN-9 val, the 370 mapped synsets' val images; IN-9 train, the about 45k images with one box that
#: go through GrabCut (the paper's balanced IN-9 train has 45,405); IN-9L, the 370 synsets' train
#: images (the paper's balanced IN-9L has about 180k); Full-IN, the 50k val images.
WORKLOADS = (("IN-9 val", "in9", 370 * 50), ("IN-9 train", "in9", 45_000), ("IN-9L train", "in9l", 370 * 1_300),
             ("Full-IN val", "in9", 50_000))


def photos():
    """scikit-image's sample photographs with a hand-set box around their object (x0, y0, x1, y1)."""
    import skimage.data
    return [(skimage.data.chelsea(), (100, 60, 330, 300)), (skimage.data.coffee(), (170, 15, 410, 330)),
            (skimage.data.astronaut(), (140, 20, 360, 300))]


def write_tree(root: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    srcs = photos()
    preset = get_preset("in9")
    wnids = [min(w for w, c in preset.folder_of.items() if c == label) for label in range(9)]
    val = root / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    ann = root / "ILSVRC" / "Annotations" / "CLS-LOC" / "val"
    val.mkdir(parents=True)
    ann.mkdir(parents=True)
    rows = []
    for i in range(n):
        photo, (bx0, by0, bx1, by1) = srcs[i % len(srcs)]
        src = Image.fromarray(photo)
        scale = rng.uniform(1.0, 1.4)
        big = src.resize((int(W * scale), int(H * scale)), Image.BILINEAR)
        sx, sy = big.width / src.width, big.height / src.height
        x, y = int(rng.integers(0, big.width - W + 1)), int(rng.integers(0, big.height - H + 1))
        im = np.asarray(big.crop((x, y, x + W, y + H))).astype(np.float32)
        im = np.clip(im * rng.uniform(0.8, 1.2, 3), 0, 255).astype(np.uint8)
        box = (max(0, int(bx0 * sx) - x), max(0, int(by0 * sy) - y),
               min(W, int(bx1 * sx) - x), min(H, int(by1 * sy) - y))
        if rng.random() < 0.5:
            im, box = im[:, ::-1], (W - box[2], box[1], W - box[0], box[3])
        stem, wnid = f"ILSVRC2012_val_{i + 1:08d}", wnids[i % 9]
        Image.fromarray(np.ascontiguousarray(im)).save(val / f"{stem}.JPEG", "JPEG", quality=90)
        (ann / f"{stem}.xml").write_text(
            f"<annotation><size><width>{W}</width><height>{H}</height></size><object><name>{wnid}</name><bndbox>"
            f"<xmin>{box[0]}</xmin><ymin>{box[1]}</ymin><xmax>{box[2]}</xmax><ymax>{box[3]}</ymax></bndbox>"
            f"</object></annotation>")
        rows.append((stem, f"{wnid} {' '.join(map(str, box))}"))
    with open(root / "LOC_val_solution.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ImageId", "PredictionString"])
        w.writerows(rows)


def timed(fn) -> tuple:
    t0, c0 = time.perf_counter(), os.times()
    result = fn()
    c1 = os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system) + (c1.children_user - c0.children_user) + \
        (c1.children_system - c0.children_system)
    return time.perf_counter() - t0, cpu, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=81)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bgbench-imagenet-bench-"))
    try:
        write_tree(tmp / "imagenet", args.images)
        print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")

        def cfg(name, **kw):
            out = tmp / name
            shutil.rmtree(out, ignore_errors=True)
            return BuildConfig(images=tmp / "imagenet", boxes=None, out=out, split="val", **kw)

        best = {}
        for _ in range(args.repeats):
            for workers in (1, 2):
                wall, cpu, res = timed(lambda: build(cfg(f"w{workers}", preset="in9", workers=workers), progress=False))
                best[workers] = min(best.get(workers, (1e9,)), (wall, cpu, len(res.built), len(res.rejects)))
            wall, cpu, _ = timed(lambda: build(cfg("shard", preset="in9", shard=_shard()), progress=False))
            best["prepare"] = min(best.get("prepare", (1e9,)), (wall, cpu))
            records = read_shards([tmp / "shard"])["val"]
            shutil.rmtree(tmp / "merged", ignore_errors=True)
            wall, cpu, _ = timed(lambda: merge(tmp / "merged", records, progress=False))
            best["merge"] = min(best.get("merge", (1e9,)), (wall, cpu))
            wall, cpu, _ = timed(lambda: build(cfg("in9l", preset="in9l"), progress=False))
            best["in9l"] = min(best.get("in9l", (1e9,)), (wall, cpu))
        load = os.getloadavg()
        print(f"load average after: {' '.join(f'{v:.2f}' for v in load)}")
        n = args.images
        for workers in (1, 2):
            wall, cpu, built, rejected = best[workers]
            print(f"in9, {workers} worker(s): {wall:.1f} s, {n / wall:.2f} img/s "
                  f"({n / wall / workers:.2f} per worker), "
                  f"CPU {cpu:.1f} s, built {built}, rejected {rejected}")
        print(f"in9 halves, 1 worker: prepare {best['prepare'][0]:.1f} s ({n / best['prepare'][0]:.2f} img/s), "
              f"merge {best['merge'][0]:.1f} s ({n / best['merge'][0]:.2f} img/s)")
        print(f"in9l, 1 worker: {best['in9l'][0]:.1f} s, {n / best['in9l'][0]:.2f} img/s")
        rates = {"in9": n / best[1][0], "in9l": n / best["in9l"][0]}
        print("projected hours (rate per worker x cores, linear scaling assumed):")
        for name, preset, count in WORKLOADS:
            r = rates[preset]
            print(f"  {name} ({count} images): " + ", ".join(f"{c} cores {count / (r * c) / 3600:.2f} h"
                                                            for c in (1, 2, 16, 128)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _shard():
    from bgbench.data.shards import Shard
    return Shard(0, 1)


if __name__ == "__main__":
    main()
