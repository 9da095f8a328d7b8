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
    PYTHONPATH=src:benchmarks python benchmarks/eval_throughput.py --realsize --arch resnet50 --device cuda \
        --variants all --batch-size 240 --speedups eager bf16 compile --workers-grid 1 2 4 8 --json eval.json

`bf16` modes run both sides under bf16 autocast; `--workers-grid` times the eval path of the last
`--speedups` mode (its model built and warm) with each number of decoding threads, against that
mode's pure forward; `--json` writes every figure after each mode, so a run stopped part-way keeps
the modes it finished.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from bgbench.data.in9 import discover
from bgbench.options import resolve_workers
from bgbench.evaluation.numerics import forward_context
from bgbench.evaluation.feed import to_tensor
from bgbench.evaluation.predict import predict_items
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


#: --speedups: the forward options of every model command (--channels-last, --compile), and bf16
#: autocast around the forward (what a GPU user reaches for first; eval itself runs fp32).
MODES = ("eager", "bf16", "channels_last", "compile", "channels_last+compile", "bf16+channels_last+compile")


def precision_of(mode: str) -> str:
    """The `--precision` a mode runs: bf16 autocast for the bf16 modes, exact fp32 otherwise."""
    return "bf16" if "bf16" in mode else "fp32"


def precision(mode: str, device: str):
    """The pure forward's arithmetic, the eval path's own: bf16 autocast, or strict fp32 (TF32 off)."""
    return forward_context(precision_of(mode), device)


def feed_alone(items, batch_size: int, device: str, synced) -> float:
    """Images/s of the feed by itself (pixel cache -> batches -> device, [0,1] float there), no model:
    the rate above which the feed, not the forward, would set the eval path's pace."""
    from bgbench.data.pixel_cache import pixels_of
    from bgbench.options import resolve_workers
    from bgbench.evaluation.feed import Images, batches
    pixels = pixels_of(items, wait=True)

    def once() -> float:
        t = synced()
        for _ in batches(Images.of(pixels, batch_size), device=device, workers=resolve_workers(None, device)):
            pass
        return synced() - t
    once()
    return len(items) / min(once() for _ in range(2))


def dump(figures: dict, path) -> None:
    """Write the figures so far to `path` (if any): a run stopped later keeps them."""
    if path:
        modes = [dict(zip(("mode", "eval", "forward", "warmup_s", "eval_first_pass"), row)) for row in figures["modes"]]
        Path(path).write_text(json.dumps({**figures, "modes": modes}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=192)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--arch", default="resnet18", help="a timm architecture (random weights)")
    ap.add_argument("--realsize", action="store_true", help="the cached 224-px JPEG q75 set (realsize_data.py)")
    ap.add_argument("--per-class", type=int, default=50, help="--realsize: images per class (default %(default)s)")
    ap.add_argument("--size", type=int, default=224, help="image size (default %(default)s)")
    ap.add_argument("--variants", nargs="+", default=["original"],
                    help="--realsize: the variant folders timed, or 'all' (default original)")
    ap.add_argument("--workers", type=int, help="decoding threads of the eval path (default: bgbench's for the device)")
    ap.add_argument("--speedups", nargs="+", default=["eager"], choices=MODES, metavar="MODE",
                    help=f"forward modes to time, each against its own pure forward: {', '.join(MODES)} "
                         "(default: eager)")
    ap.add_argument("--workers-grid", type=int, nargs="+", default=[], metavar="N",
                    help="decoding threads to try on the eval path of the last --speedups mode")
    ap.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
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
            layout = discover(realsize_dataset(per_class=args.per_class, size=args.size))
        else:
            make_jpegs(Path(tmp), args.images, args.size)
            layout = discover(Path(tmp))
        variants = layout.variants if args.variants == ["all"] else args.variants
        items = [it for v in variants for it in layout.items(v)]
        from bgbench.data.images import decode_image
        t = time.perf_counter()
        for it in items:  # decode + [0,1] tensor alone, one thread
            to_tensor(decode_image(it.path)[None])
        decode_rate = len(items) / (time.perf_counter() - t)
        batches = [to_tensor(np.stack([decode_image(it.path) for it in items[i:i + args.batch_size]]), args.device)
                   for i in range(0, len(items), args.batch_size)]
        n = len(items)
        figures = {"arch": args.arch, "images": n, "size": args.size, "batch_size": args.batch_size,
                   "device": args.device, "realsize": args.realsize, "torch_threads": torch.get_num_threads(),
                   "default_workers": resolve_workers(None, args.device), "workers": args.workers,
                   "decode_per_core": decode_rate, "modes": rows, "workers_grid": None}
        for mode in args.speedups:
            model = speed_up(copy.deepcopy(base), channels_last="channels_last" in mode, compile="compile" in mode)
            t = synced()
            with torch.inference_mode(), precision(mode, args.device):  # warm-up (and the compile: timed apart)
                for x in {tuple(x.shape): x for x in batches}.values():
                    model(x)
            warm = synced() - t

            def eval_path(workers=args.workers) -> float:
                t = synced()
                predict_items(model, items, batch_size=args.batch_size, device=args.device, progress=False,
                              workers=workers, precision=precision_of(mode))
                return synced() - t
            from realsize_data import fresh_pixel_cache
            with fresh_pixel_cache():  # the first pass: decoding into an empty pixel cache
                first = eval_path()
            eval_path()  # the cache of this run's own folder, written once (a warm-up when already there)
            figures.setdefault("feed_alone", feed_alone(items, args.batch_size, args.device, synced))
            eval_t, fwd_t = [], []
            for _ in range(args.repeats):  # interleave, so drift hits both sides alike
                eval_t.append(eval_path())
                t = synced()
                with torch.inference_mode(), precision(mode, args.device):
                    for x in batches:
                        model(x)
                fwd_t.append(synced() - t)
            rows.append((mode, n / min(eval_t), n / min(fwd_t), warm, n / first))
            if mode == args.speedups[-1] and args.workers_grid:
                rates = {w: n / min(eval_path(w) for _ in range(args.repeats)) for w in args.workers_grid}
                figures["workers_grid"] = {"mode": mode, "forward": rows[-1][2], "eval": rates,
                                           "best": max(rates, key=rates.get)}
            dump(figures, args.json)
    print(f"images: {n} at {args.size}x{args.size} ({'realsize JPEG q75' if args.realsize else 'random JPEG q90'}), "
          f"{args.arch}, "
          f"batch {args.batch_size}, {args.device}, torch threads {torch.get_num_threads()}, decoding workers "
          f"{args.workers or 'default'}, load average {os.getloadavg()[0]:.2f}")
    eager = dict((r[0], r) for r in rows).get("eager")
    for mode, e, f, warm, first in rows:
        print(f"[{mode}] bgbench eval path : {e:7.1f} images/s (from the pixel cache: feed + forward + decision)")
        print(f"[{mode}] first pass        : {first:7.1f} images/s (decoding into an empty cache; ratio "
              f"{first / f:.3f}, target >= 0.8)")
        print(f"[{mode}] pure forward      : {f:7.1f} images/s (pre-decoded batches)")
        print(f"[{mode}] ratio             : {e / f:.3f}  (target >= 0.9)   warm-up {warm:.1f}s"
              + (f"   eval path vs eager's: {e / eager[1]:.2f}x" if eager and mode != "eager" else ""))
    grid = figures["workers_grid"]
    if grid:
        print(f"[{grid['mode']}] eval path by decoding threads, against a pure forward of {grid['forward']:.1f} "
              "images/s: " + ", ".join(f"{w}: {r:.1f} ({r / grid['forward']:.3f})" for w, r in grid["eval"].items())
              + f"; best {grid['best']}")
    print(f"decode + preprocess alone: {decode_rate:7.1f} images/s on one core")
    if figures.get("feed_alone"):
        print(f"feed alone (pixel cache -> {args.device}, no model): {figures['feed_alone']:9.1f} images/s")


if __name__ == "__main__":
    main()
