"""Backgrounds Challenge: a faithful re-implementation of upstream's loop vs bgbench's engine.

One Synthetic-9 test set at 224x224 (9 x 20 foregrounds, 180 backgrounds) and one ResNet-18 trained
on its ORIGINAL train split. (a) is upstream's `challenge_eval.py` loop: for every foreground it
runs a DataLoader over `only_bg_t` (re-decoding every background), composites in float, batches of
32, and stops at the first batch holding a fooling background. (b) is bgbench's engine, timed end
to end (decoding included). The script asserts identical verdicts, then prints the speedup, the
pairs each side evaluated, and the share of (b)'s wall time spent in the model's forward.

    python benchmarks/challenge_speed.py [--per-class 20] [--train-per-class 40] [--epochs 2]
"""
from __future__ import annotations

import argparse
import os
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
from bgbench.data.layout import discover
from bgbench.data.synthetic import write_dataset
from bgbench.evaluate.challenge import ChallengeEngine
from bgbench.evaluate.challenge_run import load_backgrounds, load_foregrounds
from bgbench.evaluate.predict import decide
from bgbench.models import create_model
from bgbench.train import TrainConfig, train


def reference_loop(model, root: Path, batch_size: int = 32):
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
            img_name = mask_name.replace("npy", "png")
            img = transforms.ToTensor()(Image.open(root / "original" / "val" / classname / img_name))
            is_adv = False
            for inp, _ in bg_loader:
                big_im = img.repeat(inp.shape[0], 1, 1, 1)
                big_mask = fg_mask.repeat(inp.shape[0], 1, 1, 1)
                combined = inp * (1 - big_mask) + big_mask * big_im
                with torch.inference_mode():
                    pred, _ = decide(model, model(combined), Mapping.ARGMAX)
                pairs += inp.shape[0]
                if (pred != fg_class).any().item():
                    is_adv = True
                    break
            verdicts[f"{classname}/{Path(mask_name).stem}"] = is_adv
    return verdicts, pairs


def engine_run(model, root: Path, batch_size: int):
    t0 = time.perf_counter()
    layout = discover(root, variants=["original", "only_bg_t"])
    pairs = layout.foregrounds()
    bg_items, backgrounds = load_backgrounds(layout)
    fg_images, fg_masks = load_foregrounds(layout, pairs, list(range(len(pairs))))
    labels = np.array([it.label for it, _ in pairs])
    engine = ChallengeEngine(model, backgrounds, torch.tensor([it.label for it in bg_items]), batch_size=batch_size)
    results = engine.verdicts(fg_images, fg_masks, labels, list(range(len(pairs))), progress=False)
    wall = time.perf_counter() - t0
    verdicts = {pairs[r.index][0].image_id: r.fooled for r in results}
    return verdicts, engine.stats, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=20)
    ap.add_argument("--train-per-class", type=int, default=40)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workdir", help="keep data and model here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        if not (root / "original" / "val").is_dir():
            write_dataset(root, per_class=args.per_class, size=224, seed=0, split="val", progress=False)
            write_dataset(root, per_class=args.train_per_class, size=224, seed=0, split="train", progress=False)
        ckpt = root / "resnet18" / "model.pt"
        if not ckpt.is_file():
            t = time.perf_counter()
            train(TrainConfig(data=str(root), variant="original", model="timm:resnet18", out=str(ckpt.parent),
                              epochs=args.epochs, batch_size=32), progress=False)
            print(f"trained ResNet-18 on ORIGINAL in {time.perf_counter() - t:.0f}s")
        model = create_model(f"file:{ckpt}")
        t = time.perf_counter()
        ref_verdicts, ref_pairs = reference_loop(model, root)
        ref_wall = time.perf_counter() - t
        eng_verdicts, stats, eng_wall = engine_run(model, root, args.batch_size)
    assert ref_verdicts == eng_verdicts, "verdicts differ"
    n = len(ref_verdicts)
    fooled = sum(ref_verdicts.values())
    print(f"foregrounds {n}, backgrounds {n}, fooled {fooled} (identical verdicts: yes)")
    print(f"(a) reference loop : {ref_wall:8.1f}s  {ref_pairs:7d} pairs  {ref_pairs / ref_wall:6.1f} pairs/s")
    print(f"(b) bgbench engine : {eng_wall:8.1f}s  {stats.pairs:7d} pairs  {stats.pairs / eng_wall:6.1f} pairs/s"
          "")
    print(f"speedup            : {ref_wall / eng_wall:.1f}x  (target >= 20x)")
    print(f"forward share of (b): {100 * stats.forward_seconds / eng_wall:.1f}%  (target >= 85%)")


if __name__ == "__main__":
    main()
