"""Images/s of `bgbench eval`'s prediction path against a pure model forward on the same batches.

A timm architecture (`--arch`, default resnet18; resnet50 for the real-size figures, random
weights, 9 classes) at 224x224, on the CPU or `--device cuda`. Both sides see the same images in
the same batches;
(a) times decode + [0,1] conversion + forward + decision, exactly as `bgbench eval` runs it,
(b) times only `model(x)` on batches that are already decoded. Prints the ratio (target >= 0.9),
and the decode + preprocess rate alone, per core.

The images: `--realsize` reads the cached 224-px JPEG (quality 75) IN-9-layout set of
`realsize_data.py` (its ORIGINAL variant, 50 per class); otherwise smooth random JPEGs are made
in a temporary folder.

    PYTHONPATH=src python benchmarks/eval_throughput.py [--images 192] [--batch-size 32] [--device cpu]
    PYTHONPATH=src:benchmarks python benchmarks/eval_throughput.py --realsize --arch resnet50
    PYTHONPATH=src:benchmarks python benchmarks/eval_throughput.py --realsize --arch resnet50 \
        --speedups eager channels_last compile channels_last+compile
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from bgbench.data.layout import discover
from bgbench.evaluation.predict import predict_items, to_tensor
from bgbench.models import create_model
from bgbench.models.options import speed_up


def make_jpegs(root: Path, n: int, size: int = 224) -> None:
    rng = np.random.default_rng(0)
    for i in range(n):
        cls = root / "original" / "val" / f"{i % 9:02d}_c"
        cls.mkdir(parents=True, exist_ok=True)
        # smooth random content compresses like a photo, unlike white noise
        small = rng.integers(0, 256, (size // 8, size // 8, 3), dtype=np.uint8)
        Image.fromarray(small).resize((size, size), Image.BICUBIC).save(cls / f"img_{i:05d}.JPEG", quality=90)


#: --speedups: the forward options of every model command (--channels-last, --compile).
MODES = ("eager", "channels_last", "compile", "channels_last+compile")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=192)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--arch", default="resnet18", help="a timm architecture (random weights)")
    ap.add_argument("--realsize", action="store_true", help="the cached 224-px JPEG q75 set (realsize_data.py)")
    ap.add_argument("--workers", type=int, help="decoding threads of the eval path (default: bgbench's for the device)")
    ap.add_argument("--speedups", nargs="+", default=["eager"], choices=MODES, metavar="MODE",
                    help=f"forward modes to time, each against its own pure forward: {', '.join(MODES)} "
                         "(default: eager)")
    args = ap.parse_args()
    torch.manual_seed(0)
    base = create_model(f"timm:{args.arch}", num_classes=9).eval().to(args.device)

    def synced() -> float:  # GPU work is asynchronous: a time is taken once it has finished
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.realsize:
            from realsize_data import realsize_dataset
            root = realsize_dataset()
        else:
            root = Path(tmp)
            make_jpegs(root, args.images)
        items = discover(root).items("original")
        from bgbench.data.images import decode_image
        t = time.perf_counter()
        for it in items:  # decode + [0,1] tensor alone, one thread
            to_tensor(decode_image(it.path)[None])
        decode_rate = len(items) / (time.perf_counter() - t)
        batches = [to_tensor(np.stack([decode_image(it.path) for it in items[i:i + args.batch_size]]), args.device)
                   for i in range(0, len(items), args.batch_size)]
        for mode in args.speedups:
            model = speed_up(copy.deepcopy(base), channels_last="channels_last" in mode, compile="compile" in mode)
            t = synced()
            with torch.inference_mode():  # warm-up (and, compiled, the compile: timed apart)
                for x in {tuple(x.shape): x for x in batches}.values():
                    model(x)
            warm = synced() - t
            eval_t, fwd_t = [], []
            for _ in range(args.repeats):  # interleave, so drift hits both sides alike
                t = synced()
                predict_items(model, items, batch_size=args.batch_size, device=args.device, progress=False,
                              workers=args.workers)
                eval_t.append(synced() - t)
                t = synced()
                with torch.inference_mode():
                    for x in batches:
                        model(x)
                fwd_t.append(synced() - t)
            n = len(items)
            rows.append((mode, n / min(eval_t), n / min(fwd_t), warm))
    print(f"images: {n} at 224x224 ({'realsize JPEG q75' if args.realsize else 'random JPEG q90'}), {args.arch}, "
          f"batch {args.batch_size}, {args.device}, torch threads {torch.get_num_threads()}, decoding workers "
          f"{args.workers or 'default'}, load average {os.getloadavg()[0]:.2f}")
    eager = dict((r[0], r) for r in rows).get("eager")
    for mode, e, f, warm in rows:
        print(f"[{mode}] bgbench eval path : {e:7.1f} images/s (decode + forward + decision)")
        print(f"[{mode}] pure forward      : {f:7.1f} images/s (pre-decoded batches)")
        print(f"[{mode}] ratio             : {e / f:.3f}  (target >= 0.9)   warm-up {warm:.1f}s"
              + (f"   eval path vs eager's: {e / eager[1]:.2f}x" if eager and mode != "eager" else ""))
    print(f"decode + preprocess alone: {decode_rate:7.1f} images/s on one core")


if __name__ == "__main__":
    main()
