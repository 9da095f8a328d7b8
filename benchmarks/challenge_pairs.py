"""Pairs the challenge engine evaluates against the minimum possible, at a larger scale.

`challenge_speed.py` runs real models at 224 px, so it can afford only ~54 foregrounds; the
engine's ordering learns as a run goes, so its pair count is better judged on more. Here a
Synthetic-9 test set at 64 px (9 x `--per-class` foregrounds and as many backgrounds) and
timm:test_resnet models trained on its train split with `erm` and with `bgswap` (as
`recipes.py` does) are evaluated on every foreground x background pair once (the full prediction
matrix, which the engine's `full_rows` computes, as --full does). The engine itself is then
replayed on that matrix: the same `ChallengeEngine.verdicts`, with a model that looks each
composite's prediction up in the matrix (the composite carries its foreground's and background's
indices in two pixels). Verdicts are asserted equal to the matrix's. Printed per model and batch
size: fooled share, pairs evaluated, the minimum (never-fooled x backgrounds + 1 per fooled
foreground) and their ratio (target <= 1.05), for three ordering seeds.

    python benchmarks/challenge_pairs.py [--per-class 50] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bgbench.data.in9 import discover
from bgbench.variants.synth import write_dataset
from bgbench.measures.challenge.engine import ChallengeEngine
from bgbench.measures.challenge.runner import load_backgrounds, load_foregrounds
from bgbench.measures.challenge.sample import sample_order
from bgbench.models import create_model
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.training import TrainConfig, train


class Lookup(nn.Module):
    """matrix[i, j] for the composite of foreground i (index in pixel 0) and background j (pixel 1)."""

    def __init__(self, matrix: np.ndarray, num_classes: int):
        super().__init__()
        self.matrix = torch.as_tensor(matrix.astype(np.int64))
        self.num_classes = num_classes

    def forward(self, x):
        v = (x * 255).round().long()
        i = v[:, 0, 0, 0] + 256 * v[:, 1, 0, 0]
        j = v[:, 0, 0, 1] + 256 * v[:, 1, 0, 1]
        return nn.functional.one_hot(self.matrix[i, j], self.num_classes).float()


def replay(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray, batch_size: int, seed: int) -> int:
    n, b = matrix.shape
    fg = torch.zeros(n, 1, 2, 3, dtype=torch.uint8)
    fg[:, 0, 0, 0], fg[:, 0, 0, 1] = torch.arange(n) % 256, torch.arange(n) // 256
    bg = torch.zeros(b, 1, 2, 3, dtype=torch.uint8)
    bg[:, 0, 1, 0], bg[:, 0, 1, 1] = torch.arange(b) % 256, torch.arange(b) // 256
    masks = torch.zeros(n, 1, 2, dtype=torch.bool)
    masks[:, 0, 0] = True
    model = BgModel(Lookup(matrix, 9), ModelSpec(name="lookup", arch="lookup", num_classes=9, mean=(0, 0, 0),
                                                 std=(1, 1, 1)))
    engine = ChallengeEngine(model, bg, torch.as_tensor(bg_labels), batch_size=batch_size, seed=seed)
    order = sample_order(seed, [str(i) for i in range(n)], fg_labels)
    got = np.zeros(n, bool)
    for r in engine.verdicts(fg, masks, fg_labels, order, progress=False):
        got[r.index] = r.fooled
    assert (got == (matrix != fg_labels[:, None]).any(axis=1)).all(), "verdicts differ from the matrix"
    return engine.stats.pairs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=50)
    ap.add_argument("--train-per-class", type=int, default=150)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--workdir", help="keep data, models and matrices here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        if not (root / "original" / "val").is_dir():
            write_dataset(root, per_class=args.per_class, size=64, seed=1, split="val", progress=False)
            write_dataset(root, per_class=args.train_per_class, size=64, seed=1, split="train", progress=False)
        layout = discover(root, variants=["original", "only_bg_t"])
        pairs = layout.foregrounds()
        fg_labels = np.array([it.label for it, _ in pairs])
        bg_items, bg = load_backgrounds(layout)
        bg_labels = np.array([it.label for it in bg_items])
        for recipe in ("erm", "bgswap"):
            out = root / recipe
            if not (out / "model.pt").is_file():
                t = time.perf_counter()
                train(TrainConfig(data=str(root), variant="original", model="timm:test_resnet", out=str(out),
                                  epochs=args.epochs, batch_size=64, recipe=recipe, threads=1), progress=False)
                print(f"trained test_resnet ({recipe}) in {time.perf_counter() - t:.0f}s", flush=True)
            path = root / f"matrix_{recipe}.npy"
            if not path.is_file():
                t = time.perf_counter()
                model = create_model(f"file:{out / 'model.pt'}").eval()
                fg, masks = load_foregrounds(pairs, list(range(len(pairs))))
                engine = ChallengeEngine(model, bg, torch.as_tensor(bg_labels), batch_size=256)
                rows = engine.full_rows(fg, masks, fg_labels, range(len(fg)))
                np.save(path, np.stack([r.row for r in rows]))
                print(f"full matrix ({recipe}) in {time.perf_counter() - t:.0f}s", flush=True)
            matrix = np.load(path)
            fooled = (matrix != fg_labels[:, None]).any(axis=1)
            minimum = int((~fooled).sum()) * matrix.shape[1] + int(fooled.sum())
            for bs in args.batch_sizes:
                counts = [replay(matrix, fg_labels, bg_labels, bs, seed) for seed in range(3)]
                print(f"{recipe:<7} fooled {fooled.sum()}/{len(fooled)} ({100 * fooled.mean():.0f}%)  batch {bs:<4} "
                      f"pairs {' / '.join(map(str, counts))} (seeds 0-2), minimum {minimum}: "
                      f"{' / '.join(f'{c / minimum:.3f}' for c in counts)}x", flush=True)


if __name__ == "__main__":
    main()
