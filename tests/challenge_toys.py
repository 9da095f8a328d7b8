"""Tiny hand-made models and datasets for challenge tests: fast, and with known behaviour.

- `write_colour_dataset`: 9 classes; a foreground is a solid square of its class's colour, a
  background is grey noise with one square patch of some class's colour.
- `ColourCount`: logits are 10 x the share of pixels of each class colour. A foreground is never
  fooled when its square outweighs every background's visible patch, so the challenge accuracy is
  neither 0 nor 1, and it costs nothing to evaluate.
- `tie_model`: a linear model whose top two logits differ by far less than bf16's resolution, with
  the sign set by the composite's mean red: bf16 decides differently from fp32 on many composites.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn

from bgbench.models.spec import IMAGENET1K, BgModel, ModelSpec

COLOURS = np.array([(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (255, 0, 255), (0, 255, 255),
                    (255, 128, 0), (128, 0, 255), (0, 128, 255)], dtype=np.uint8)
CLASSES = [f"{c:02d}_colour{c}" for c in range(9)]


def _noise(rng, size):
    v = rng.integers(60, 200, size=(size, size, 1), dtype=np.uint8)
    return np.repeat(v, 3, axis=2)


def write_colour_dataset(root: Path, per_class: int = 30, size: int = 16, seed: int = 0) -> Path:
    """Write original/, only_bg_t/ and fg_mask/ (split 'val') in the IN-9 layout."""
    rng = np.random.default_rng(seed)
    for c, name in enumerate(CLASSES):
        for v in ("original", "only_bg_t"):
            (root / v / "val" / name).mkdir(parents=True, exist_ok=True)
        (root / "fg_mask" / "val" / name).mkdir(parents=True, exist_ok=True)
        for k in range(per_class):
            stem = f"img{k:03d}"
            # foreground: a square of the class colour over its own noise
            a = int(rng.integers(3, 10))
            y0, x0 = rng.integers(0, size - a + 1, size=2)
            mask = np.zeros((size, size), bool)
            mask[y0:y0 + a, x0:x0 + a] = True
            img = _noise(rng, size)
            img[mask] = COLOURS[c]
            Image.fromarray(img).save(root / "original" / "val" / name / f"{stem}.png")
            np.save(root / "fg_mask" / "val" / name / f"{stem}.npy", mask.astype(np.uint8))
            # background of class c: noise with a patch of colour c
            b = int(rng.integers(2, 9))
            y0, x0 = rng.integers(0, size - b + 1, size=2)
            bg = _noise(rng, size)
            bg[y0:y0 + b, x0:x0 + b] = COLOURS[c]
            Image.fromarray(bg).save(root / "only_bg_t" / "val" / name / f"{stem}.png")
    return root


class ColourCount(nn.Module):
    def __init__(self, tol: float = 20 / 255):
        super().__init__()
        self.register_buffer("colours", torch.tensor(COLOURS, dtype=torch.float32).div(255).view(1, 9, 3, 1, 1))
        self.tol = tol

    def forward(self, x):
        match = ((x[:, None] - self.colours).abs() < self.tol).all(dim=2)  # N x 9 x H x W
        return 10 * match.float().mean(dim=(2, 3))


def colour_model() -> BgModel:
    spec = ModelSpec(name="toy:colour_count", arch="toy", num_classes=9, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0),
                     class_names=tuple(CLASSES))
    return BgModel(ColourCount(), spec).eval()


def tie_model(size: int, classes: tuple = (0, 1), num_classes: int = 9, gap: float = 0.02) -> BgModel:
    """Logits: classes[0] -> 10, classes[1] -> 10 - gap/2 + gap * mean(red), all others -10.

    fp32 decides classes[1] exactly when mean red > 0.5. Under bf16 autocast the linear layer's
    output is rounded to bf16, whose spacing near 10 is 0.0625 >> gap, so both logits round to the
    same value (or the rounding decides): a near-tie on every input.
    """
    lin = nn.Linear(3 * size * size, num_classes)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.fill_(-10.0)
        lin.bias[classes[0]] = 10.0
        lin.bias[classes[1]] = 10.0 - gap / 2
        red = torch.zeros(3, size, size)
        red[0] = gap / (size * size)
        lin.weight[classes[1]] = red.flatten()
    label_space = IMAGENET1K if num_classes == 1000 else "dataset"
    spec = ModelSpec(name="toy:tie", arch="toy", num_classes=num_classes, label_space=label_space,
                     mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    return BgModel(nn.Sequential(nn.Flatten(), lin), spec).eval()
