"""Backgrounds Challenge: upstream's loop vs bgbench's engine, on fooled and background-robust models.

One Synthetic-9 test set at 224x224 (9 x `--per-class` foregrounds and as many backgrounds) and
EfficientNet-Lite0s (ImageNet weights from `zoo:efficientnet_lite0`) fine-tuned on its train split
(40 per class): `erm` (ORIGINAL) and `bgswap` (`--recipe bgswap`) after 1 and after 3 epochs. The
background-robust ones leave many foregrounds never fooled, and each of those must see every
background, so early exit cannot help and only the cost per pair and the number of pairs count.

For each model it prints:
- the fooled share;
- wall and CPU time of (a) upstream's `challenge_eval.py` loop (re-decodes every background for every
  foreground, float compositing, batches of 32, stops at the first fooling batch) and (b) bgbench's
  engine, timed from decoding to the last verdict, and the speedup (a)/(b). Identical verdicts are
  asserted;
- pairs evaluated against the minimum possible: never-fooled x backgrounds + 1 per fooled
  foreground (target <= 1.05x);
- the engine's pairs/s against a pure forward of the same model at the same batch size on a ready
  float batch (target >= 0.9x);
- the same for `--precision bf16-verified` (verdicts asserted equal to fp32; composites rechecked
  in fp32, audited, and fooling composites confirmed in fp32 counted).

Start-up is reported on its own: a bare interpreter, the challenge's imports, and the decode rate
of backgrounds with 1, 2 and 4 decoding threads (4,050 decodes: the full challenge's count, made
by decoding this set's backgrounds repeatedly).

    python benchmarks/challenge_speed.py [--per-class 6] [--batch-size 64] [--workdir DIR]
    python benchmarks/challenge_speed.py --size 224 --arch resnet50 --realsize --workdir DIR

`--arch resnet50 --realsize`: the real-size run. The test set is IN-9's format (224-px JPEG quality
75 with .npy masks, from `realsize_data.py`); the models are a seeded random-init ResNet-50 with a
linear head fitted on its ORIGINAL features (background-reliant) and one on its MIXED-RAND features
(background-robust), as `bgbench train --recipe linear-probe` fits them: no weights to download.

`--workdir` keeps data and trained models between runs. Bigger: `--per-class 20` (needs ~4x the time).

On a GPU (`benchmarks/gpu/run.sh` runs this): `--device cuda` holds the backgrounds and the model on
the GPU; `--sample N` takes the first N foregrounds of the run's seeded, class-stratified order (as
`bgbench challenge --sample N`), each against every background; `--no-startup` skips the start-up
figures; `--json FILE` writes every row (after each, so a run stopped part-way keeps them), with
the projected time of the full 4,050 x 4,050 challenge at the measured pure forward rate.

    python benchmarks/challenge_speed.py --arch resnet50 --realsize --per-class 50 --sample 45 --device cuda \
        --no-reference --batch-size 256 --json challenge.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import ImageFolder

from bgbench.classes import Mapping
from bgbench.data.in9 import discover
from bgbench.variants.synth import write_dataset
from bgbench.measures.challenge.engine import ChallengeEngine
from bgbench.data.pixel_cache import pixels_of
from bgbench.measures.challenge.runner import load_backgrounds, load_foregrounds
from bgbench.measures.challenge.sample import sample_order
from bgbench.evaluation.numerics import strict_fp32
from bgbench.evaluation.predict import decide
from bgbench.models import create_model
from bgbench.training import TrainConfig, train


def reference_loop(model, root: Path, batch_size: int = 32, device: str = "cpu"):
    """Upstream's challenge_eval.py / adv_bgs_eval_model, minus CUDA and DataParallel."""
    bg_loader = DataLoader(ImageFolder(str(root / "only_bg_t" / "val"), transform=transforms.ToTensor()),
                           batch_size=batch_size, shuffle=False, num_workers=0)
    fg_mask_base = root / "fg_mask" / "val"
    class_names = sorted(os.listdir(fg_mask_base))
    verdicts, pairs = {}, 0
    for fg_class, classname in enumerate(class_names):
        for mask_name in sorted(os.listdir(fg_mask_base / classname)):
            fg_mask = np.load(fg_mask_base / classname / mask_name)
            fg_mask = np.tile(fg_mask[:, :, np.newaxis], [1, 1, 3]).astype("uint8")
            fg_mask = transforms.ToTensor()(Image.fromarray(fg_mask * 255))
            img_name = mask_name.replace("npy", "JPEG")  # upstream's line; Synthetic-9 writes PNG
            if not (root / "original" / "val" / classname / img_name).is_file():
                img_name = mask_name.replace("npy", "png")
            img = transforms.ToTensor()(Image.open(root / "original" / "val" / classname / img_name))
            is_adv = False
            for inp, _ in bg_loader:
                big_im = img.repeat(inp.shape[0], 1, 1, 1)
                big_mask = fg_mask.repeat(inp.shape[0], 1, 1, 1)
                combined = inp * (1 - big_mask) + big_mask * big_im
                with torch.inference_mode():
                    pred, _ = decide(model, model(combined.to(device)), Mapping.ARGMAX)
                pairs += inp.shape[0]
                if (pred != fg_class).any().item():
                    is_adv = True
                    break
            verdicts[f"{classname}/{Path(mask_name).stem}"] = is_adv
    return verdicts, pairs


class Clock:
    """Wall and CPU seconds (this process, all threads) since creation."""

    def __init__(self):
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def read(self) -> tuple:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0


def engine_run(model, root: Path, batch_size: int, precision: str = "fp32", device: str = "cpu",
               sample: int | None = None):
    """Decode, then verdicts in the run's seeded order (as `bgbench challenge` visits them); the
    first `sample` foregrounds of that order, if given."""
    t0 = Clock()
    layout = discover(root, variants=["original", "only_bg_t"])
    pairs = layout.foregrounds()
    bg_items, backgrounds = load_backgrounds(layout)
    fg_images, fg_masks = load_foregrounds(pairs, list(range(len(pairs))))
    labels = np.array([it.label for it, _ in pairs])
    decode = t0.read()
    t1 = Clock()
    engine = ChallengeEngine(model, backgrounds.to(device), torch.tensor([it.label for it in bg_items]),
                             batch_size=batch_size, precision=precision)
    order = sample_order(0, [it.image_id for it, _ in pairs], labels)[:sample]
    results = engine.verdicts(fg_images, fg_masks, labels, order, progress=False)
    verdict = t1.read()
    total = t0.read()
    verdicts = {pairs[r.index][0].image_id: r.fooled for r in results}
    return {"verdicts": verdicts, "stats": engine.stats, "total": total, "decode": decode, "verdict": verdict,
            "verifier": engine.verifier.stats if engine.verifier else None, "num_bg": len(bg_items),
            "shape": tuple(backgrounds.shape[1:])}


def pure_forward_rate(model, batch_size: int, shape, precision: str, seconds: float = 8.0,
                      device: str = "cpu") -> tuple:
    """Images/s of model(x) alone on one ready float batch (what the engine's pairs/s is held to),
    in the engine's precision (bf16 autocast for bf16-verified: the fp32 rechecks are the overhead;
    fp32 as strict as the engine's, TF32 off)."""
    h, w, _ = shape
    # the engine's input layout: NHWC uint8 permuted to NCHW, i.e. channels_last memory
    x = torch.rand(batch_size, h, w, 3, generator=torch.Generator().manual_seed(0)).to(device).permute(0, 3, 1, 2)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    ctx = torch.autocast(kind, dtype=torch.bfloat16) if precision != "fp32" else strict_fp32()
    with torch.inference_mode(), ctx:
        model(x)
        n, clock = 0, Clock()
        while n < 3 or clock.read()[0] < seconds:
            model(x)
            n += 1
        if kind == "cuda":
            torch.cuda.synchronize()  # the queued forwards have finished
        wall, cpu = clock.read()
        return n * batch_size / wall, n * batch_size / cpu


def startup(root: Path) -> dict:
    """Interpreter start-up, the challenge's imports, and the background decode rate."""
    def wall(code: str) -> float:
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})
            best = min(best, time.perf_counter() - t)
        return best
    bare = wall("pass")
    imports = wall("import bgbench.measures.challenge.runner, bgbench.models")
    items = discover(root, variants=["only_bg_t"]).items("only_bg_t")
    items = (items * (4050 // len(items) + 1))[:4050]
    rates = {}
    for workers in (1, 2, 4):  # the pixel cache's first pass, in a fresh cache each time
        with tempfile.TemporaryDirectory() as cache:
            os.environ["BGBENCH_CACHE"] = cache
            t = time.perf_counter()
            pixels_of(items, processes=workers, use_cache=True, wait=True)
            rates[workers] = len(items) / (time.perf_counter() - t)
    os.environ.pop("BGBENCH_CACHE", None)
    return {"bare": bare, "imports": imports - bare, "decode": rates}


def ensure_model(root: Path, name: str, recipe: str, epochs: int) -> Path:
    """EfficientNet-Lite0 (ImageNet weights from the zoo) fine-tuned on the train split with `recipe`."""
    ckpt = root / name / "model.pt"
    if not ckpt.is_file():
        t = time.perf_counter()
        train(TrainConfig(data=str(root), variant="original", model="timm:tf_efficientnet_lite0",
                          init="zoo:efficientnet_lite0", out=str(ckpt.parent), epochs=epochs, batch_size=32,
                          lr=1e-3, recipe=recipe), progress=False)
        print(f"fine-tuned EfficientNet-Lite0 ({recipe}, {epochs} epochs) in {time.perf_counter() - t:.0f}s",
              flush=True)
    return ckpt


def ensure_probe(root: Path, train_root: Path, arch: str, variant: str, device: str = "cpu") -> Path:
    """A seeded random-init timm `arch` with a linear head fitted on its features of `variant`'s train
    images (`bgbench train --recipe linear-probe`): ORIGINAL gives a background-reliant model,
    MIXED-RAND a background-robust one, in minutes on a CPU and without any downloaded weights."""
    from bgbench.api import train as fit
    out = root / f"{arch}_probe_{variant}"
    if not (out / "model.pt").is_file():
        t = time.perf_counter()
        fit(train_root, out, model=f"timm:{arch}", recipe="linear-probe", variant=variant, progress=False,
            feature_cache="none", device=device)
        print(f"fitted a linear head on timm:{arch} features of {variant} in {time.perf_counter() - t:.0f}s",
              flush=True)
    return out / "model.pt"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=6)
    ap.add_argument("--train-per-class", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16-verified"])
    ap.add_argument("--models", nargs="+", default=["erm:3", "bgswap:1", "bgswap:3"], metavar="RECIPE:EPOCHS",
                    help="EfficientNet-Lite0 fine-tuned with RECIPE for EPOCHS (default: %(default)s)")
    ap.add_argument("--no-reference", action="store_true", help="skip upstream's loop (the slow part)")
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's choice; 1 makes the CPU-time "
                    "ratios robust on a shared machine)")
    ap.add_argument("--workdir", help="keep data and models here (default: a temporary folder)")
    ap.add_argument("--arch", help="a timm architecture (random init, e.g. resnet50) with linear heads fitted on "
                    "ORIGINAL and on MIXED-RAND features, instead of the fine-tuned EfficientNet-Lite0s")
    ap.add_argument("--size", type=int, default=224, help="image size (default %(default)s)")
    ap.add_argument("--realsize", action="store_true", help="the test set as JPEG quality 75, as IN-9's release "
                    "(`realsize_data.py`, --per-class images per class)")
    ap.add_argument("--device", default="cpu", help="torch device of the engine and the models (default cpu)")
    ap.add_argument("--sample", type=int, help="only the first N foregrounds of the seeded order, against every "
                    "background (default: all)")
    ap.add_argument("--no-startup", action="store_true", help="skip the start-up figures")
    ap.add_argument("--forward-seconds", type=float, default=8.0, help="time each pure forward rate over at "
                    "least this long (default %(default)s)")
    ap.add_argument("--json", metavar="FILE", help="also write every row to FILE as JSON")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        root = train_root = work
        if args.realsize:
            from realsize_data import realsize_dataset
            root = realsize_dataset(per_class=args.per_class, size=args.size)
            train_root = work / "train"
        if not (root / "original" / "val").is_dir():
            write_dataset(root, per_class=args.per_class, size=args.size, seed=0, split="val", progress=False)
        if not (train_root / "original" / "train").is_dir():
            write_dataset(train_root, per_class=args.train_per_class, size=args.size, seed=0, split="train",
                          progress=False)
        fmt = "JPEG" if args.realsize else "PNG"
        print(f"test set: {root} ({fmt}{' q75' if args.realsize else ''}, {args.size} px)", flush=True)
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; torch threads "
              f"{torch.get_num_threads()}", flush=True)
        s = None if args.no_startup else startup(root)
        if s is not None:
            rates = ", ".join(f"{w} process{'es' if w > 1 else ''} {r:.0f} img/s" for w, r in s["decode"].items())
            print(f"start-up: interpreter {s['bare']:.2f}s, challenge imports {s['imports']:.2f}s; decoding 4,050 "
                  f"backgrounds ({args.size} px {fmt}): {rates}", flush=True)
        rows, differ = [], []
        record = {"arch": args.arch, "size": args.size, "batch_size": args.batch_size, "device": args.device,
                  "sample": args.sample, "startup": s, "rows": rows}
        specs = (["probe:original", "probe:mixed_rand"] if args.arch and args.models == ap.get_default("models")
                 else args.models)
        for spec in specs:
            recipe, _, option = spec.partition(":")
            if args.arch:  # probe:VARIANT, a linear head on the architecture's random features
                name = f"{args.arch} probe {option}"
                ckpt = ensure_probe(work, train_root, args.arch, option, args.device)
            else:  # RECIPE:EPOCHS
                epochs = int(option or 3)
                name = f"{recipe} {epochs}ep"
                ckpt = ensure_model(work, f"{recipe}_{epochs}ep", recipe, epochs)
            model = create_model(f"file:{ckpt}").eval().to(args.device)
            ref = None
            if not args.no_reference:
                clock = Clock()
                ref_verdicts, ref_pairs = reference_loop(model, root, device=args.device)
                ref = (ref_verdicts, ref_pairs, clock.read())
            base = None
            for precision in args.precisions:
                run = engine_run(model, root, args.batch_size, precision, args.device, args.sample)
                verdicts = run["verdicts"]
                if ref is not None and verdicts != {k: ref[0][k] for k in verdicts}:
                    differ.append(f"{name} {precision}: verdicts differ from the reference loop")
                if base is not None and verdicts != base:
                    differ.append(f"{name} {precision}: verdicts differ from fp32")
                base = base or verdicts
                n, fooled = len(verdicts), sum(verdicts.values())
                minimum = (n - fooled) * run["num_bg"] + fooled
                pure = pure_forward_rate(model, args.batch_size, run["shape"], precision, args.forward_seconds,
                                         args.device)
                v = run["verifier"]
                row = {"model": name, "precision": precision, "n": n, "fooled": fooled, "pairs": run["stats"].pairs,
                       "minimum": minimum, "total": run["total"], "decode": run["decode"][0],
                       "pairs_s": tuple(run["stats"].pairs / t for t in run["verdict"]), "pure": pure,
                       "ref": ref[2] if ref else None, "ref_pairs": ref[1] if ref else None,
                       "forward_share": run["stats"].forward_seconds / run["verdict"][0],
                       "rechecked": v.rechecked if v else None, "composites": v.composites if v else None,
                       "delta": v.delta if v else None, "spread": v.max_spread if v else None,
                       "audited": v.audited if v else None, "confirmed": v.confirmed if v else None,
                       "load": os.getloadavg()[0], "num_bg": run["num_bg"], "same_verdicts_as_fp32": verdicts == base,
                       "full_challenge_hours": 4050 * 4050 / pure[0] / 3600}
                rows.append(row)
                print(_line(row), flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(record, indent=1))
        print()
        print(_table(rows))
        if differ:
            raise SystemExit("; ".join(differ))


def _ratio(a: tuple, b: tuple) -> str:
    """'wall / CPU' ratios of two (wall, cpu) pairs."""
    return f"{a[0] / b[0]:.2f} / {a[1] / b[1]:.2f}"


def _line(r: dict) -> str:
    out = (f"{r['model']:<11} {r['precision']:<14} fooled {r['fooled']}/{r['n']}  engine {r['total'][0]:.1f}s wall "
           f"{r['total'][1]:.1f}s CPU (decode {r['decode']:.1f}s)  pairs {r['pairs']} = "
           f"{r['pairs'] / r['minimum']:.3f}x min {r['minimum']}  pairs/s {r['pairs_s'][0]:.1f} vs pure forward "
           f"{r['pure'][0]:.1f} (wall / CPU ratio {_ratio(r['pairs_s'], r['pure'])})")
    if r["ref"] is not None:
        out += (f"  | reference {r['ref'][0]:.1f}s wall {r['ref'][1]:.1f}s CPU, {r['ref_pairs']} pairs: speedup "
                f"(wall / CPU) {_ratio(r['ref'], r['total'])}")
    if r["rechecked"] is not None:
        out += (f"  | rechecked {r['rechecked']}/{r['composites']} (delta {r['delta']:.3g}, largest spread "
                f"{r['spread']:.3g}, {r['audited']} audited, {r['confirmed']} fooling composites confirmed)")
    return out + f"  | forward share {100 * r['forward_share']:.0f}%, load average {r['load']:.1f}"


def _table(rows) -> str:
    head = ("| model | precision | fooled | reference (a): wall, CPU | engine (b): wall, CPU | speedup (a)/(b) "
            "wall, CPU | pairs (b) / minimum | pairs/s (b) / pure forward, wall, CPU | rechecked in fp32 |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        ref = f"{r['ref'][0]:.1f} s, {r['ref'][1]:.1f} s ({r['ref_pairs']} pairs)" if r["ref"] is not None else "-"
        speed = f"{_ratio(r['ref'], r['total'])}" if r["ref"] is not None else "-"
        rech = f"{r['rechecked']} / {r['composites']}" if r["rechecked"] is not None else "-"
        share = f"{r['fooled']}/{r['n']} ({100 * r['fooled'] / r['n']:.0f}%)"
        engine = f"{r['total'][0]:.1f} s, {r['total'][1]:.1f} s"
        pairs = f"{r['pairs']} / {r['minimum']} = {r['pairs'] / r['minimum']:.3f}x"
        lines.append(f"| {r['model']} | {r['precision']} | {share} | {ref} | {engine} | {speed} | {pairs} | "
                     f"{_ratio(r['pairs_s'], r['pure'])} | {rech} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
