"""Batched prediction: images in, one (image id, label, prediction, confidence) row per image out.

Images come through the feed (`evaluation.feed.batches`: decoded once into the pixel cache,
batched, on the device as [0,1] floats), as they are: no resize, no crop.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..classes import IMAGENET1K, Mapping, map_logits, stores_sums, superclass_sums
from ..data.images import check_mask_fits
from ..data.layout import Item, Layout
from ..data.pixel_cache import Pixels, pixels_of
from ..distributed import Ranks
from ..errors import BgbenchError, DataError
from ..options import BATCH_SIZE, resolve_workers
from .feed import Images, batches, gathered
from .numerics import forward_context


@dataclass
class Predictions:
    """Per-image outputs of one model on one variant."""

    image_ids: List[str]
    labels: np.ndarray
    preds: np.ndarray
    conf: np.ndarray
    top5_classes: Optional[np.ndarray] = None  # (N, 5) raw ImageNet classes of 1000-class models
    top5_probs: Optional[np.ndarray] = None  # (N, 5) their probabilities
    superclass_probs: Optional[np.ndarray] = None  # (N, C) probability mass per IN-9 class

    def rows(self, variant: str) -> List[tuple]:
        """Rows of the store's `predictions` table (without run_id)."""
        def cell(a: Optional[np.ndarray], i: int):
            if a is None:
                return None
            v = a[i].tolist()  # 7 significant digits: tiny masses keep their order (superclass)
            return json.dumps([float(f"{x:.7g}") for x in v] if a.dtype.kind == "f" else v)
        return [(variant, i, int(self.labels[k]), int(self.preds[k]), float(self.conf[k]),
                 cell(self.top5_classes, k), cell(self.top5_probs, k), cell(self.superclass_probs, k))
                for k, i in enumerate(self.image_ids)]

    @classmethod
    def of_runs(cls, runs: Sequence[tuple], raw: bool) -> "Predictions":
        """The predictions of runs of images, each (its items, their predictions, confidences[, top-5
        classes, their probabilities, the class sums]), in their order; the last three kept where
        `raw` (a 1000-class model)."""
        def column(j: int, dtype) -> np.ndarray:
            return np.concatenate([run[j] for run in runs]).astype(dtype) if runs else np.zeros(0, dtype)
        extra = {}
        if raw and runs:
            extra = {"top5_classes": column(3, np.int64), "top5_probs": column(4, np.float64),
                     "superclass_probs": column(5, np.float64)}
        items = [it for run in runs for it in run[0]]
        return cls(image_ids=[it.image_id for it in items],
                   labels=np.asarray([it.label for it in items], dtype=np.int64), preds=column(1, np.int64), conf=column(2, np.float64), **extra)

    @property
    def correct(self) -> np.ndarray:
        return self.preds == self.labels

    def correct_by_id(self) -> dict:
        return dict(zip(self.image_ids, self.correct.tolist()))


def decide(model: torch.nn.Module, logits: torch.Tensor, mapping: Mapping | str) -> Tuple[torch.Tensor, torch.Tensor]:
    """Predictions and confidences in the dataset's label space."""
    if model.spec.label_space == IMAGENET1K:
        return map_logits(logits, mapping, model.class_map)
    conf, pred = logits.float().softmax(dim=1).max(dim=1)
    return pred, conf


def class_probabilities(model: torch.nn.Module, logits: torch.Tensor) -> torch.Tensor:
    """(N, C) probability of each dataset class: the softmax of a dataset-class model; for a
    1000-class model, the probability mass of each class's ImageNet classes (its class map)."""
    probs = logits.float().softmax(dim=1)
    return superclass_sums(probs, model.class_map) if model.spec.label_space == IMAGENET1K else probs


def _check_finite(model: torch.nn.Module, bad: List[torch.Tensor], runs: List[Sequence[Item]]) -> None:
    """Outputs that are NaN or infinite decide nothing: one line naming the first such image, before
    anything is recorded (a broken checkpoint, or a numeric overflow at reduced precision).

    `bad[j]` is batch j's (n,) mask of non-finite rows, kept on the device as the batches ran, so
    the check costs one wait for the device per pass instead of one per batch."""
    if not bad:
        return
    flags = torch.cat(bad)
    if not bool(flags.any()):
        return
    items = [it for run in runs for it in run]
    first = items[int(flags.nonzero()[0, 0])]
    per_batch = [int(b.sum()) for b in bad]
    j = next(k for k, c in enumerate(per_batch) if c)
    raise BgbenchError(f"{model.spec.name} gave non-finite outputs (NaN or infinity) for {per_batch[j]} of "
                       f"{len(runs[j])} images of a batch, first {first.path}: its weights are broken or a value "
                       f"overflowed; nothing was recorded")


def predict_items(model: torch.nn.Module, items: Sequence[Item], *, batch_size: int = BATCH_SIZE, device: str = "cpu",
                  mapping: Mapping | str = Mapping.ARGMAX, checker=None, progress: bool = True,
                  desc: str = "predict", render: Optional[Callable[[Item], np.ndarray]] = None,
                  forward: Optional[Callable] = None, workers: Optional[int] = None, precision: str = "fp32",
                  pixels: Optional[Pixels] = None, ranks: Optional[Ranks] = None) -> Optional[Predictions]:
    """Run `model` over `items` and return per-image predictions, in item order. Under torchrun
    (`ranks`) each rank predicts its share of whole batches and rank 0 returns every rank's rows,
    gathered as the probes' are (`feed.gathered`); the other ranks return None.

    `render` (item -> HxWx3 uint8) replaces decoding, for variants computed on the fly;
    `forward(model, x) -> logits` replaces the plain `model(x)` (e.g. ten-crop averaging);
    `workers`: processes decoding batches ahead (default: `options.default_workers(device)`);
    `precision`: 'fp32' (exact: TF32 off), or 'bf16'/'fp16' autocast;
    `pixels`: the decoded pixels of `items` where the caller has them; by default `pixels_of(items)`,
    the cache's entry of these items, decoded into it on first use.

    Predictions stay on the device until the pass ends and cross to the host once.
    """
    if pixels is None:
        pixels = Pixels(items) if render is not None else pixels_of(items)
    images = Images.of(pixels, batch_size, render=render, checker=checker)
    keep_raw = model.spec.label_space == IMAGENET1K
    # per batch: (its index, predictions, confidences and, of 1000-class models, top-5 and sums), its
    # non-finite rows and its items
    outs, bad, runs = [], [], []
    fed = batches(images, device=device, workers=resolve_workers(workers, device), ranks=ranks, progress=progress,
                  desc=desc)
    with torch.inference_mode(), forward_context(precision, device):
        for k, batch in fed:
            logits = (model(batch.x) if forward is None else forward(model, batch.x)).float()
            bad.append(~torch.isfinite(logits).all(dim=1))
            runs.append(batch.items)
            outs.append((k, *decide(model, logits, mapping),
                         *(imagenet_summary(logits, model.class_map) if keep_raw else ())))
    _check_finite(model, bad, runs)
    # per batch, one entry a run of its images (its items and their slice of each column): gathered
    # whole, not an image at a time
    parts: Dict[int, list] = {}
    if outs:
        keys, *columns = zip(*outs)
        columns = [torch.cat(c).cpu().numpy() for c in columns]
        at = 0
        for k, run in zip(keys, runs):
            parts.setdefault(k, []).append((run, *(c[at:at + len(run)] for c in columns)))
            at += len(run)
    parts = gathered(parts, len(images.chunks), ranks or Ranks())
    return None if parts is None else Predictions.of_runs(parts, keep_raw)


def imagenet_summary(logits: torch.Tensor, class_map=None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What the store keeps of a 1000-way output: top-5 classes, their probabilities, and the
    probability mass of each dataset class (under `class_map`, IN-9's when None), enough to
    re-decide under either mapping later."""
    probs = logits.float().softmax(dim=1)
    top_p, top_c = probs.topk(5, dim=1)
    return top_c, top_p, superclass_sums(probs, class_map) if stores_sums(class_map) else probs[:, :0]


def mask_checker(layout: Layout):
    """For originals: the mask must exist and match the image's size (when fg_mask is present;
    a RIVAL10 layout checks its masks itself, and resizes them to their images)."""
    if not layout.has_masks or layout.kind != "in9":
        return None

    def check(item: Item, image: np.ndarray) -> None:
        path = layout.mask_path(item.image_id)
        if not path.is_file():
            raise DataError(f"no mask for {item.path} (expected {path})")
        check_mask_fits(path, item.path, image.shape[:2])
    return check
