"""Training recipes as batch augmentations: ERM, mixup, cutmix and background swapping.

A recipe turns a batch of [0,1] images (B,3,H,W), their labels and their indices into the
dataset into (inputs, targets) plus the loss that reads those targets. Recipes are registered by
name in `recipes.py` (torch-free, so the CLI's `--recipe` choices cost no torch import); the
builders here are what those names point at.

Background swapping ('bgswap') is the paper's MIXED-RAND recipe done on the fly: instead of one
fixed MIXED-RAND image per foreground, every epoch draws a fresh donor background, so the model
sees each foreground over many backgrounds and cannot learn the class from the background.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from ..data.images import IMAGE_SUFFIXES, decode_image
from ..data.layout import MASK_DIR, Item
from ..data.manifest import mask_box
from ..errors import BgbenchError
from ..variants.functions import only_bg_t
from .recipes import DEFAULT_BGSWAP_P


class BatchAugment:
    """ERM: the batch unchanged, hard labels, cross-entropy. Base class of the other recipes."""

    #: mixing recipes need an even batch (timm's Mixup pairs a batch with its reverse).
    needs_even_batch = False

    def __call__(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x, y

    def inputs(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The images alone, as training sees them (used to recompute BN statistics for SWA)."""
        return self(x, y, idx)[0]

    def loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, target)


class TimmMix(BatchAugment):
    """mixup / cutmix through `timm.data.Mixup`, with soft targets and SoftTargetCrossEntropy.

    timm draws its mixing coefficients from numpy's global RNG, so the loop seeds it and saves
    its state in `last.pt` for exact resumes.
    """

    needs_even_batch = True

    def __init__(self, num_classes: int, mixup_alpha: float = 0.0, cutmix_alpha: float = 0.0):
        from timm.data import Mixup
        from timm.loss import SoftTargetCrossEntropy
        self.mix = Mixup(mixup_alpha=mixup_alpha, cutmix_alpha=cutmix_alpha, label_smoothing=0.0,
                         num_classes=num_classes)
        self.criterion = SoftTargetCrossEntropy()

    def __call__(self, x, y, idx):
        return self.mix(x, y)

    def inputs(self, x, y, idx):
        return x  # BN statistics from the clean images (mixing is a label-space trick)

    def loss(self, logits, target):
        return self.criterion(logits, target)


def swap_backgrounds(foreground: torch.Tensor, mask: torch.Tensor, background: torch.Tensor,
                     apply: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Batched `variants.functions.composite`: foreground pixels where `mask`, background elsewhere.

    Args:
        foreground: (B,C,H,W) images.
        mask: (B,H,W) or (B,1,H,W) bool foreground masks.
        background: (B,C,H,W) donor backgrounds, same dtype as `foreground`.
        apply: (B,) bool; rows where it is False are returned unchanged.

    Exact, no blending: every foreground pixel keeps its value bit for bit.
    """
    if mask.ndim == 3:
        mask = mask[:, None]
    out = torch.where(mask.bool(), foreground, background)
    if apply is not None:
        out = torch.where(apply.view(-1, 1, 1, 1), out, foreground)
    return out


class BgSwap(BatchAugment):
    """On-the-fly MIXED-RAND: with probability `p` a foreground goes over the only_bg_t background
    of a random image of a uniformly random class (donor class uniform over classes, donor image
    uniform within it). The label is unchanged: it is the foreground's class.
    """

    def __init__(self, masks: torch.Tensor, backgrounds: torch.Tensor, labels: torch.Tensor, num_classes: int,
                 p: float = DEFAULT_BGSWAP_P, generator: Optional[torch.Generator] = None):
        self.masks = masks.bool()  # (N,H,W)
        self.backgrounds = backgrounds  # (N,H,W,3) uint8
        self.p = p
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)
        self._order = torch.argsort(labels, stable=True)
        self._counts = torch.bincount(labels, minlength=num_classes)
        self._offsets = torch.cumsum(self._counts, 0) - self._counts
        self._classes = torch.nonzero(self._counts).flatten()  # a class with no image cannot donate

    def donors(self, n: int) -> torch.Tensor:
        """Indices of `n` donor images: a uniform class, then a uniform image of that class."""
        cls = self._classes[torch.randint(len(self._classes), (n,), generator=self.generator)]
        within = (torch.rand(n, generator=self.generator) * self._counts[cls]).long()
        within = torch.minimum(within, self._counts[cls] - 1)
        return self._order[self._offsets[cls] + within]

    def __call__(self, x, y, idx):
        bg = self.backgrounds[self.donors(len(idx))].permute(0, 3, 1, 2).to(x.dtype)
        apply = torch.rand(len(idx), generator=self.generator) < self.p
        if x.is_floating_point():  # the loop feeds [0,1] floats; uint8 batches stay uint8
            bg = bg / 255.0
        return swap_backgrounds(x, self.masks[idx], bg, apply), y


# ---------------------------------------------------------------------------------------------
# data for bgswap


def load_masks_and_backgrounds(root: str | Path, split: str, items: Sequence[Item],
                               shape: Tuple[int, int]) -> Tuple[torch.Tensor, torch.Tensor]:
    """Masks (N,H,W bool) and only_bg_t backgrounds (N,H,W,3 uint8) for the training `items`.

    Backgrounds come from `ROOT/only_bg_t/<split>/` (matched by stem) when that folder exists,
    else they are computed from the mask's bounding box with `variants.functions.only_bg_t`.
    """
    root = Path(root)
    mask_dir = root / MASK_DIR / split
    how = (f"create them with `bgbench synth --out {root} --split {split}` (Synthetic-9) or build "
           f"{MASK_DIR}/{split}/<class>/<stem>.npy masks for your images")
    if not mask_dir.is_dir():
        raise BgbenchError(f"--recipe bgswap needs foreground masks, but {mask_dir} is missing; {how}")
    bg_dir = root / "only_bg_t" / split
    masks: List[np.ndarray] = []
    backgrounds: List[np.ndarray] = []
    for it in items:
        mpath = mask_dir / f"{it.image_id}.npy"
        if not mpath.is_file():
            raise BgbenchError(f"--recipe bgswap needs a foreground mask for every training image, but {mpath} "
                               f"is missing; {how}")
        mask = np.load(mpath).astype(bool)
        if mask.shape != tuple(shape):
            raise BgbenchError(f"mask {mpath} is {mask.shape[1]}x{mask.shape[0]}, its image {it.path} is "
                               f"{shape[1]}x{shape[0]}")
        found = [bg_dir / f"{it.image_id}{suffix}" for suffix in IMAGE_SUFFIXES] if bg_dir.is_dir() else []
        bg = next((decode_image(f) for f in found if f.is_file()), None)  # the folder's, matched by stem
        if bg is None:
            box = mask_box(mask)
            if box is None:
                raise BgbenchError(f"mask {mpath} is empty, so its only_bg_t background cannot be computed")
            bg = only_bg_t(decode_image(it.path), mask, box)
        elif bg.shape[:2] != tuple(shape):
            raise BgbenchError(f"background {bg_dir / it.image_id}.* differs in size from {it.path}")
        masks.append(mask)
        backgrounds.append(bg)
    return torch.from_numpy(np.stack(masks)), torch.from_numpy(np.stack(backgrounds))


# ---------------------------------------------------------------------------------------------
# the builders the recipe names point at: `build(cfg, data, generator)` with the run's `TrainConfig`,
# its `loop.TrainingData` and the generator of the augmentations' draws


def build_bgswap(cfg, data, generator: torch.Generator) -> BgSwap:
    return BgSwap(*load_masks_and_backgrounds(cfg.data, cfg.split, data.items, tuple(data.images.shape[1:3])),
                  data.labels, len(data.classes), p=cfg.bgswap_p, generator=generator)


def build_erm(cfg, data, generator: torch.Generator) -> BatchAugment:
    return BatchAugment()


def build_mixup(cfg, data, generator: torch.Generator) -> BatchAugment:
    return TimmMix(len(data.classes), mixup_alpha=cfg.mixup_alpha)


def build_cutmix(cfg, data, generator: torch.Generator) -> BatchAugment:
    return TimmMix(len(data.classes), cutmix_alpha=cfg.cutmix_alpha)
