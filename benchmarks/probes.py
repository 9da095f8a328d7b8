"""Images/s of the noise, saliency, features and ablate probes against the model work they cannot avoid.

Synthetic-9 (PNG + masks) at --size px, ResNet-18 (9 classes, random init), on --device; or, with
`--realsize --arch resnet50`, the real-size case: the 224-px JPEG (quality 75) IN-9-layout set of
`realsize_data.py` (--per-class images per class) and a ResNet-50, where the targets are >= 0.9.
- noise: the probe (decode + masks + per-image seeded noise + forwards + decisions), counted in
  noisy images per second, against a pure `model(x)` on the same number of already-decoded
  batches of the same size. Target ratio >= 0.8.
- saliency: the probe (decode + Grad-CAM via Captum + pytorch-grad-cam's post-processing (min-max,
  cv2 resize, min-max) + RIVAL10's eight per-image measures), in images per second, against a
  forward plus a backward of the predicted logits on the same decoded batches. Target ratio >= 0.8.
- features: the probe (decode + masks + forward_features + pooled features + head + every channel's
  background share + Salient ImageNet's ranking), in images per second, against one pure forward
  per image on the same decoded batches. Target ratio >= 0.8. Its galleries (off here) re-run the
  network on the images they show, at most classes x top features x top images; they are timed
  apart (`features+galleries`, 5 x 5 per class, one PNG per class).
- ablate: the probe (decode + masks + attribute masks + gray regions + forwards + decisions and
  true-class probabilities), in ablated-or-clean images per second (one per stored row), against a
  pure `model(x)` over as many already-decoded images. Target ratio >= 0.8.
Both sides are interleaved over --repeats and the best time of each is kept.

    PYTHONPATH=src python benchmarks/probes.py [--per-class 8] [--size 128] [--batch-size 24] [--device cpu]
    PYTHONPATH=src:benchmarks python benchmarks/probes.py --realsize --arch resnet50 [--workers 1]

`--json FILE` also writes each probe's rate, its baseline's and their ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bgbench.evaluation.numerics import strict_fp32

from bgbench.measures.ablate import MEASURE as ABLATE
from bgbench.measures.ablate.probe import AblateConfig
from bgbench.measures.features import MEASURE as FEATURES
from bgbench.measures.features.probe import FeaturesConfig
from bgbench.measures.noise import MEASURE as NOISE
from bgbench.measures.noise.probe import NoiseConfig
from bgbench.measures.saliency import MEASURE as SALIENCY
from bgbench.measures.saliency.probe import SaliencyConfig
from bgbench.data.images import decode_image
from bgbench.data.in9 import discover
from bgbench.variants.synth import write_dataset
from bgbench.evaluation.predict import to_tensor
from bgbench.models import create_model
from bgbench.runs import run_measure


def fixed_and_marginal(whole: float, first_half: float, baseline: float, n: int, half: int) -> dict:
    """A probe's run on n images (`whole` s) and on the first `half` (`first_half` s): its fixed cost
    (what a run pays whatever its size: the dataset's listing and fingerprint, the model's checks,
    the ranking) and its ratio per image beside the baseline's, fixed costs aside."""
    per_image = max(whole - first_half, 1e-9) / (n - half)
    return {"fixed_seconds": max(whole - per_image * n, 0.0), "per_image_ratio": (baseline / n) / per_image}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=8)
    ap.add_argument("--size", type=int, help="image size (default 128; 224 with --realsize)")
    ap.add_argument("--arch", default="resnet18", help="a timm architecture, random init (default %(default)s)")
    ap.add_argument("--realsize", action="store_true", help="the cached JPEG q75 set of realsize_data.py")
    ap.add_argument("--workers", type=int, help="decoding threads (default: bgbench's for the device)")
    ap.add_argument("--batch-size", type=int, default=24)
    ap.add_argument("--levels", nargs="+", default=["60/255", "120/255"], help="a grid name or levels")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--probes", nargs="+", choices=("noise", "saliency", "features", "ablate"),
                    default=["noise", "saliency", "features", "ablate"], help="which probes to time (default: all)")
    ap.add_argument("--json", metavar="FILE", help="also write the rates and ratios to FILE as JSON")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = args.device
    args.size = args.size or (224 if args.realsize else 128)
    model = create_model(f"timm:{args.arch}", num_classes=9).eval().to(dev)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.realsize:
            from realsize_data import realsize_dataset
            root = realsize_dataset(per_class=args.per_class, size=args.size)
        else:
            write_dataset(root, per_class=args.per_class, size=args.size, seed=0, split="val", progress=False)
        items = discover(root, variants=["original"]).items("original")
        n = len(items)
        batches = [to_tensor(np.stack([decode_image(it.path) for it in items[i:i + args.batch_size]]), dev)
                   for i in range(0, n, args.batch_size)]
        ncfg = NoiseConfig(levels=args.levels, trials=args.trials, batch_size=args.batch_size, device=dev,
                           workers=args.workers)
        forwards_per_image = 2 * len(ncfg.levels) * args.trials
        scfg = SaliencyConfig(batch_size=args.batch_size, device=dev, examples=0, workers=args.workers)
        fcfg = FeaturesConfig(batch_size=args.batch_size, device=dev, galleries=0, workers=args.workers)
        gcfg = FeaturesConfig(batch_size=args.batch_size, device=dev, workers=args.workers)
        with torch.inference_mode(), strict_fp32():  # the probes' own fp32: TF32 off
            model(batches[0])  # warm-up
        run_measure(SALIENCY, model, root, scfg, progress=False, limit=args.batch_size)
        run_measure(FEATURES, model, root, fcfg, progress=False, limit=args.batch_size)
        acfg = AblateConfig(batch_size=args.batch_size, device=dev, workers=args.workers)
        ablated = len(run_measure(ABLATE, model, root, acfg, progress=False).rows)  # images through the model

        def sync():
            if dev.startswith("cuda"):
                torch.cuda.synchronize()

        def pure_forward():
            with torch.inference_mode(), strict_fp32():  # the probes' own fp32: TF32 off
                for _ in range(forwards_per_image):
                    for x in batches:
                        model(x).argmax(dim=1)
            sync()

        def forward_once():
            with torch.inference_mode(), strict_fp32():  # the probes' own fp32: TF32 off
                for x in batches:
                    model(x).argmax(dim=1)
            sync()

        def ablate_forward():  # as many images as the ablate probe sends, in batches of the same size
            left = ablated
            with torch.inference_mode(), strict_fp32():  # the probes' own fp32: TF32 off
                while left > 0:
                    for x in batches:
                        if left <= 0:
                            break
                        model(x[:left]).softmax(dim=1).argmax(dim=1)
                        left -= x.shape[0]
            sync()

        def forward_backward():
            with strict_fp32():  # the probes' own fp32: TF32 off
                _forward_backward()
            sync()

        def _forward_backward():
            for x in batches:
                x = x.clone().requires_grad_(False)
                logits = model(x)
                model.zero_grad(set_to_none=True)
                logits.gather(1, logits.argmax(dim=1, keepdim=True)).sum().backward()

        sides = {"noise": ("noise", "forward", "noise/2"), "saliency": ("saliency", "fwd+bwd", "saliency/2"),
                 "features": ("features", "forward once", "features+galleries", "features/2"),
                 "ablate": ("ablate", "ablate forward", "ablate/2")}
        half = n // 2  # each probe again on the first half: a run's fixed cost told from an image's
        wanted = {k for p in args.probes for k in sides[p]}
        times = {k: [] for k in wanted}
        for _ in range(args.repeats):
            for key, fn in (("noise", lambda: run_measure(NOISE, model, root, ncfg, progress=False)),
                            ("forward", pure_forward),
                            ("saliency", lambda: run_measure(SALIENCY, model, root, scfg, progress=False)),
                            ("fwd+bwd", forward_backward),
                            ("features", lambda: run_measure(FEATURES, model, root, fcfg, progress=False)),
                            ("forward once", forward_once),
                            ("features+galleries", lambda: run_measure(FEATURES, model, root, gcfg, out_dir=root / "g",
                                                                          progress=False)),
                            ("ablate", lambda: run_measure(ABLATE, model, root, acfg, progress=False)),
                            ("ablate forward", ablate_forward),
                            ("noise/2", lambda: run_measure(NOISE, model, root, ncfg, progress=False, limit=half)),
                            ("saliency/2", lambda: run_measure(SALIENCY, model, root, scfg, progress=False, limit=half)),
                            ("features/2", lambda: run_measure(FEATURES, model, root, fcfg, progress=False, limit=half)),
                            ("ablate/2", lambda: run_measure(ABLATE, model, root, acfg, progress=False, limit=half))):
                if key not in wanted:
                    continue
                t = time.perf_counter()
                fn()
                sync()
                times[key].append(time.perf_counter() - t)
        best = {k: min(v) for k, v in times.items()}
        noisy = n * forwards_per_image
        target = 0.9 if args.realsize else 0.8
        # (probe, its images, its time, the baseline's time): rates are images / time
        timed = {"noise": (noisy, best.get("noise"), best.get("forward")),
                 "saliency": (n, best.get("saliency"), best.get("fwd+bwd")),
                 "features": (n, best.get("features"), best.get("forward once")),
                 "ablate": (ablated, best.get("ablate"), best.get("ablate forward"))}
        figures = {"images": n, "size": args.size, "arch": args.arch, "batch_size": args.batch_size, "device": dev,
                   "target": target, **{p: {"probe": k / tp, "baseline": k / tb, "ratio": tb / tp,
                                            **fixed_and_marginal(tp, best[f"{p}/2"], tb, n, half)}
                                        for p, (k, tp, tb) in timed.items() if p in args.probes}}
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
        print(f"{n} images, {args.size}px {'JPEG q75' if args.realsize else 'PNG'}, {args.arch}, batch "
              f"{args.batch_size}, device {dev}, torch {torch.__version__}, threads {torch.get_num_threads()}, "
              f"decoding workers {args.workers or 'default'}, load average {os.getloadavg()[0]:.2f}")
        if "noise" in args.probes:
            print(f"noise probe:    {noisy / best['noise']:8.1f} noisy img/s   pure forward: "
                  f"{noisy / best['forward']:8.1f} img/s   ratio {best['forward'] / best['noise']:.3f} "
                  f"(target >= {target})")
        if "saliency" in args.probes:
            print(f"saliency probe: {n / best['saliency']:8.1f} img/s         forward+backward: "
                  f"{n / best['fwd+bwd']:8.1f} img/s   ratio {best['fwd+bwd'] / best['saliency']:.3f} "
                  f"(target >= {target})")
        if "features" in args.probes:
            once = best["forward once"]
            print(f"features probe: {n / best['features']:8.1f} img/s         pure forward: "
                  f"{n / once:8.1f} img/s   ratio {once / best['features']:.3f} (target >= {target})")
            print(f"  with galleries: {n / best['features+galleries']:6.1f} img/s   ratio "
                  f"{once / best['features+galleries']:.3f} (re-runs the gallery images; not a target)")
        if "ablate" in args.probes:
            r3 = best["ablate forward"] / best["ablate"]
            print(f"ablate probe:   {ablated / best['ablate']:8.1f} img/s         pure forward: "
                  f"{ablated / best['ablate forward']:8.1f} img/s   ratio {r3:.3f} (target >= {target}, "
                  f"{ablated} images: clean, object, background and each part an image has)")
        print("per image, a run's fixed cost aside (each probe timed again on the first half of the images): " +
              ", ".join(f"{p} ratio {figures[p]['per_image_ratio']:.3f} (fixed {figures[p]['fixed_seconds']:.2f} s)"
                        for p in ("noise", "saliency", "features", "ablate") if p in figures))


if __name__ == "__main__":
    main()
