"""Batched prediction: images in, one (image id, label, prediction, confidence) row per image out.

Decoding runs ahead in background threads (`data.prefetch`: PIL releases the GIL), so the model's
forward pass is not kept waiting. Images are fed as they are: [0,1], no resize, no crop.
"""
from __future__ import annotations

import json
from contextlib import closing
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from .. import console

from ..classes import Mapping, map_logits, stores_sums, superclass_sums
from ..data.images import check_mask_fits, decode_item
from ..data.layout import Item, Layout
from ..data.prefetch import prefetched, resolve_workers
from ..errors import BgbenchError
from ..models.spec import IMAGENET1K, BgModel, check_compatible  # noqa: F401 (re-exported)


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
    def concat(cls, parts: Sequence["Predictions"]) -> "Predictions":
        """The parts one after another (e.g. the shares of torchrun ranks, in rank order)."""
        def cat(name: str):
            arrays = [getattr(p, name) for p in parts if len(p.image_ids)]
            if not arrays or any(a is None for a in arrays):
                return None
            return np.concatenate(arrays)
        return cls(image_ids=[i for p in parts for i in p.image_ids],
                   labels=np.concatenate([p.labels for p in parts]).astype(np.int64),
                   preds=np.concatenate([p.preds for p in parts]).astype(np.int64),
                   conf=np.concatenate([p.conf for p in parts]).astype(np.float64),
                   top5_classes=cat("top5_classes"), top5_probs=cat("top5_probs"),
                   superclass_probs=cat("superclass_probs"))

    def take(self, order: np.ndarray) -> "Predictions":
        """The rows in `order` (positions into these rows)."""
        def pick(a: Optional[np.ndarray]):
            return None if a is None else a[order]
        return Predictions(image_ids=[self.image_ids[k] for k in order], labels=self.labels[order],
                           preds=self.preds[order], conf=self.conf[order], top5_classes=pick(self.top5_classes),
                           top5_probs=pick(self.top5_probs), superclass_probs=pick(self.superclass_probs))

    @property
    def correct(self) -> np.ndarray:
        return self.preds == self.labels

    def correct_by_id(self) -> dict:
        return dict(zip(self.image_ids, self.correct.tolist()))


def to_tensor(batch: np.ndarray, device: str | torch.device = "cpu") -> torch.Tensor:
    """NHWC uint8 -> NCHW float in [0,1] on `device` (channels_last memory, no copy of the layout).

    The uint8 batch moves before it becomes float: a quarter of the bytes cross to a GPU, and the
    conversion runs there (the same numbers: x / 255 is exact IEEE division on either device)."""
    return torch.from_numpy(batch).to(device, non_blocking=True).permute(0, 3, 1, 2).float().div_(255)


def decide(model: BgModel, logits: torch.Tensor, mapping: Mapping | str) -> Tuple[torch.Tensor, torch.Tensor]:
    """Predictions and confidences in the dataset's label space."""
    if model.spec.label_space == IMAGENET1K:
        return map_logits(logits, mapping, model.class_map)
    conf, pred = logits.float().softmax(dim=1).max(dim=1)
    return pred, conf


def class_probabilities(model: BgModel, logits: torch.Tensor) -> torch.Tensor:
    """(N, C) probability of each dataset class: the softmax of a dataset-class model; for a
    1000-class model, the probability mass of each class's ImageNet classes (its class map)."""
    probs = logits.float().softmax(dim=1)
    if model.spec.label_space == IMAGENET1K:
        return superclass_sums(probs, model.class_map)
    return probs


def _chunks(items: Sequence[Item], batch_size: int) -> Iterator[Sequence[Item]]:
    for i in range(0, len(items), batch_size):
        yield items[i:i + batch_size]


def _decode_batch(items: Sequence[Item], checker: Optional[Callable[[Item, np.ndarray], None]],
                  render: Optional[Callable[[Item], np.ndarray]] = None) -> List[np.ndarray]:
    arrays = []
    for it in items:
        arr = render(it) if render is not None else decode_item(it)
        if checker is not None:
            checker(it, arr)
        arrays.append(arr)
    return arrays


def _same_shape_runs(items: Sequence[Item], arrays: List[np.ndarray]):
    """Split a decoded batch into runs of equal image shape (custom datasets may mix sizes)."""
    start = 0
    for i in range(1, len(arrays) + 1):
        if i == len(arrays) or arrays[i].shape != arrays[start].shape:
            yield items[start:i], np.stack(arrays[start:i])
            start = i


def _check_finite(model: BgModel, logits: torch.Tensor, run: Sequence[Item]) -> None:
    """Outputs that are NaN or infinite decide nothing: one line naming the first such image, before
    anything is recorded (a broken checkpoint, or a numeric overflow at reduced precision)."""
    bad = ~torch.isfinite(logits).all(dim=1)
    if bool(bad.any()):
        first = run[int(bad.nonzero()[0, 0])]
        raise BgbenchError(f"{model.spec.name} gave non-finite outputs (NaN or infinity) for {int(bad.sum())} of "
                           f"{len(run)} images of a batch, first {first.path}: its weights are broken or a value "
                           f"overflowed; nothing was recorded")


def predict_items(model: BgModel, items: Sequence[Item], *, batch_size: int = 64, device: str = "cpu",
                  mapping: Mapping | str = Mapping.ARGMAX, checker=None, progress: bool = True,
                  desc: str = "predict", render: Optional[Callable[[Item], np.ndarray]] = None,
                  forward: Optional[Callable] = None, workers: Optional[int] = None) -> Predictions:
    """Run `model` over `items` and return per-image predictions.

    `render` (item -> HxWx3 uint8) replaces decoding, for variants computed on the fly;
    `forward(model, x) -> logits` replaces the plain `model(x)` (e.g. ten-crop averaging);
    `workers`: threads decoding batches ahead (default: `data.prefetch.default_workers(device)`).
    """
    ids: List[str] = []
    labels: List[int] = []
    preds: List[torch.Tensor] = []
    confs: List[torch.Tensor] = []
    raw: List[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # 1000-class models: top-5, sums
    keep_raw = model.spec.label_space == IMAGENET1K
    bar = console.progress(enabled=progress, total=len(items), desc=desc, unit="img")
    chunks = list(_chunks(items, batch_size))
    decoded = prefetched(chunks, lambda chunk: _decode_batch(chunk, checker, render),
                         resolve_workers(workers, device))
    with closing(decoded), torch.inference_mode():
        for chunk, arrays in zip(chunks, decoded):
            for run, batch in _same_shape_runs(chunk, arrays):
                x = to_tensor(batch, device)
                logits = model(x) if forward is None else forward(model, x)
                _check_finite(model, logits, run)
                pred, conf = decide(model, logits, mapping)
                if keep_raw:
                    raw.append(tuple(t.cpu() for t in imagenet_summary(logits, model.class_map)))
                preds.append(pred.cpu())
                confs.append(conf.cpu())
                ids.extend(it.image_id for it in run)
                labels.extend(it.label for it in run)
            bar.update(len(chunk))
    bar.close()
    extra = {}
    if raw:
        top_c, top_p, sums = (torch.cat(parts).numpy() for parts in zip(*raw))
        extra = {"top5_classes": top_c.astype(np.int64), "top5_probs": top_p.astype(np.float64),
                 "superclass_probs": sums.astype(np.float64)}
    return Predictions(image_ids=ids, labels=np.asarray(labels, dtype=np.int64),
                       preds=torch.cat(preds).numpy().astype(np.int64) if preds else np.zeros(0, np.int64),
                       conf=torch.cat(confs).numpy().astype(np.float64) if confs else np.zeros(0), **extra)


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
            from ..errors import DataError
            raise DataError(f"no mask for {item.path} (expected {path})")
        check_mask_fits(path, item.path, image.shape[:2])
    return check
