"""Tiny hand-made models and datasets for challenge tests: fast, and with known behaviour.

- `write_colour_dataset`: 9 classes; a foreground is a solid square of its class's colour, a
  background is grey noise with one square patch of some class's colour.
- `ColourCount`: logits are 10 x the share of pixels of each class colour. A foreground is never
  fooled when its square outweighs every background's visible patch, so the challenge accuracy is
  neither 0 nor 1, and it costs nothing to evaluate.
- `tie_model`: a linear model whose top two logits differ by far less than bf16's resolution, with
  the sign set by the composite's mean red: bf16 decides differently from fp32 on many composites.
- `bright_tie_model` and `brightness_tensors` / `write_brightness_dataset`: two classes decided by
  mean red against the mean of green and blue, so bf16's rounding error grows with brightness. The
  originals are dark and half of the backgrounds bright: a bf16 error measured on the originals, or
  on the dark composites, underestimates the error on the bright ones.
- `index_tensors`: foregrounds and backgrounds of 2 x 3 pixels that carry their own index, so that
  a model can look each composite's (foreground, background) pair up in a matrix.
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


class BrightTie(nn.Module):
    """Logits 64 * mean(red) and 32 * mean(green) + 32 * mean(blue): class 0 wins when red exceeds
    the mean of green and blue. In bf16 each channel mean and each logit is rounded to 8 significant
    bits, independently, so bf16's error is proportional to the brightness, and on a bright near-tie
    bf16 may decide the other class with a margin of a whole bf16 step."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2, bias=False)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[64.0, 0.0, 0.0], [0.0, 32.0, 32.0]]))

    def forward(self, x):
        return self.lin(x.mean(dim=(2, 3)))


def bright_tie_model() -> BgModel:
    spec = ModelSpec(name="toy:bright_tie", arch="toy", num_classes=2, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0),
                     class_names=("00_red", "01_cyan"))
    return BgModel(BrightTie(), spec).eval()


BRIGHT_SIZE = 8  # images are 8 x 8; the mask is the first row
DARK, BRIGHT = 13, 204  # grey levels of dark (0.05) and bright (0.8) backgrounds


def _tilted(level: int, tilt: int, rng, size: int = BRIGHT_SIZE) -> np.ndarray:
    """An image of grey `level` (green and blue moved apart by the same random amount) whose red
    minus mean(green, blue), summed over its pixels outside the first row, is `tilt` (in 1/255):
    |tilt| of those pixels get red raised or lowered by one."""
    img = np.full((size, size, 3), level, np.uint8)
    split = int(rng.integers(0, 12))  # green and blue apart, so that bf16 rounds them differently
    img[..., 1] += split
    img[..., 2] -= split
    rest = [(y, x) for y in range(1, size) for x in range(size)]
    for k in rng.choice(len(rest), size=abs(tilt), replace=False):
        img[rest[k]][0] = level + int(np.sign(tilt))
    return img


def brightness_tensors(per_class: int = 24, bg_per_class: int = 48, seed: int = 0):
    """(fg NHWC uint8, masks, fg labels, bg NHWC uint8, bg labels): see the module docstring.

    A composite's red minus mean(green, blue), in units of 1/(255 * 64), is the foreground's tilt s
    (the first row, which its mask covers) plus the background's tilt t (the rest). s is odd and t
    even, so no composite is an exact tie. Backgrounds tilt by -50 .. 50; a class-0 foreground
    (s in -25 .. 75) is fooled exactly when s + min(t) < 0, a class-1 one mirrors it, so some
    foregrounds are never fooled and some are fooled only by a few near-tie composites.
    Foregrounds, and the rest of each original, are dark; every other background is bright.
    """
    rng = np.random.default_rng(seed)
    n_fg, n_bg = 2 * per_class, 2 * bg_per_class
    labels = np.arange(n_fg) % 2
    fg = np.zeros((n_fg, BRIGHT_SIZE, BRIGHT_SIZE, 3), np.uint8)
    for i, y in enumerate(labels):
        s = 49 if i % 4 < 2 else int(rng.integers(-13, 38)) * 2 + 1  # odd, -25 .. 75
        s = s if y == 0 else -s
        fg[i] = _tilted(DARK, int(rng.integers(-20, 21)) * 2, rng)
        fg[i, 0, :] = DARK
        row = np.full(BRIGHT_SIZE, abs(s) // BRIGHT_SIZE, np.int64)
        row[:abs(s) % BRIGHT_SIZE] += 1
        fg[i, 0, :, 0] = DARK + np.sign(s) * row
    masks = np.zeros((n_fg, BRIGHT_SIZE, BRIGHT_SIZE), bool)
    masks[:, 0, :] = True
    bg_labels = np.arange(n_bg) % 2
    tilts = rng.integers(-24, 25, size=n_bg) * 2
    tilts[np.arange(n_bg) % 8 == 2], tilts[np.arange(n_bg) % 8 == 3] = -50, 50  # the extremes: bright
    bg = np.stack([_tilted(BRIGHT if j % 4 >= 2 else DARK, int(tilts[j]), rng) for j in range(n_bg)])
    return (torch.from_numpy(fg), torch.from_numpy(masks), labels, torch.from_numpy(bg),
            torch.from_numpy(bg_labels))


def write_brightness_dataset(root: Path, **kw) -> Path:
    """`brightness_tensors` written in the IN-9 layout (split 'val', two classes)."""
    fg, masks, labels, bg, bg_labels = brightness_tensors(**kw)
    names = ("00_red", "01_cyan")
    for sub in ("original", "only_bg_t", "fg_mask"):
        for name in names:
            (root / sub / "val" / name).mkdir(parents=True, exist_ok=True)
    for i, y in enumerate(labels):
        Image.fromarray(fg[i].numpy()).save(root / "original" / "val" / names[y] / f"fg{i:03d}.png")
        np.save(root / "fg_mask" / "val" / names[y] / f"fg{i:03d}.npy", masks[i].numpy().astype(np.uint8))
    for j, c in enumerate(bg_labels.tolist()):
        Image.fromarray(bg[j].numpy()).save(root / "only_bg_t" / "val" / names[c] / f"bg{j:03d}.png")
    return root


def index_tensors(n: int, b: int):
    """(foregrounds (n, 1, 2, 3) uint8, masks (n, 1, 2) bool, backgrounds (b, 1, 2, 3)): foreground k
    writes k into pixel (0, 0) and background j writes j into pixel (0, 1) (low byte, high byte),
    and the mask keeps the foreground's row 0, so every composite carries both indices."""
    fg = torch.zeros(n, 1, 2, 3, dtype=torch.uint8)
    fg[:, 0, 0, 0], fg[:, 0, 0, 1] = torch.arange(n) % 256, torch.arange(n) // 256
    bg = torch.zeros(b, 1, 2, 3, dtype=torch.uint8)
    bg[:, 0, 1, 0], bg[:, 0, 1, 1] = torch.arange(b) % 256, torch.arange(b) // 256
    masks = torch.zeros(n, 1, 2, dtype=torch.bool)
    masks[:, 0, 0] = True
    return fg, masks, bg
