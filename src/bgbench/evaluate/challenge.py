"""The Backgrounds Challenge engine: exact verdicts of upstream's `challenge_eval.py`, much faster.

A foreground (`original` image x `fg_mask`) is *fooled* if at least one `only_bg_t` background B
(every class, every image, its own included) gives pred(B*(1-m) + F*m) != y. Since m is 0/1 the
composite is an exact pixel selection, so compositing in uint8 and then dividing by 255 gives
bit-identical inputs to upstream's float arithmetic.

Where the speed comes from, without changing any verdict:
- every background is decoded once and held as one uint8 tensor on the compute device;
- composites are built on the device, and several foregrounds share one batch;
- each foreground tries the backgrounds most likely to fool it first (backgrounds of another
  class, then by how often they fooled foregrounds so far), in chunks that
  grow geometrically, and stops at the first fooling background. A foreground that is never
  fooled still sees every background, so the verdict is that of the exhaustive loop.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
import torch
from .. import console

from ..classes import Mapping
from ..models.spec import BgModel
from .challenge_rank import top_backgrounds  # noqa: F401 (re-exported)
from .predict import decide

UNMAPPED = 255  # a -1 prediction (no IN-9 class) in the uint8 prediction matrix


@dataclass
class FgResult:
    """The verdict for one foreground."""

    index: int
    fooled: bool
    pairs: int  # composites evaluated
    fooling_bg: int = -1  # index of the first fooling background found, or -1
    fooling_pred: int = -2  # what it was predicted as


@dataclass
class EngineStats:
    pairs: int = 0
    batches: int = 0
    forward_seconds: float = 0.0


@dataclass
class ChallengeEngine:
    """Verdicts (and, in full mode, whole prediction rows) for foregrounds against all backgrounds.

    Args:
        model: a BgModel taking [0,1] NCHW input.
        backgrounds: NHWC uint8 tensor of every only_bg_t image, on the compute device.
        bg_labels: class of each background.
        mapping: decision rule for 1000-class models.
        batch_size: composites per forward pass.
        precision: 'fp32' (exact, default), 'bf16' or 'fp16' (autocast; GPU).
        max_chunk: most backgrounds one foreground contributes to a batch.
    """

    model: BgModel
    backgrounds: torch.Tensor
    bg_labels: torch.Tensor
    mapping: Mapping | str = Mapping.ARGMAX
    batch_size: int = 64
    precision: str = "fp32"
    max_chunk: int = 32
    bg_pred: Optional[torch.Tensor] = None
    fool_counts: torch.Tensor = field(default=None)
    stats: EngineStats = field(default_factory=EngineStats)

    def __post_init__(self):
        self.device = self.backgrounds.device
        self.num_bg = int(self.backgrounds.shape[0])
        if self.fool_counts is None:
            self.fool_counts = torch.zeros(self.num_bg, dtype=torch.float64)
        num_labels = int(self.bg_labels.max()) + 1 if len(self.bg_labels) else 1
        self.class_fool_counts = torch.zeros(self.num_bg, num_labels, dtype=torch.float64)
        if self.precision not in ("fp32", "bf16", "fp16"):
            raise ValueError(f"precision must be fp32, bf16 or fp16, not {self.precision!r}")
        if self.precision == "fp16" and self.device.type != "cuda":
            raise ValueError("fp16 needs a GPU; use fp32 (exact) on the CPU")
        if self.device.type == "cuda":
            self.model = self.model.to(memory_format=torch.channels_last)

    # -- prediction ---------------------------------------------------------------------------
    def _autocast(self):
        if self.precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def predict_uint8(self, batch_nhwc: torch.Tensor) -> torch.Tensor:
        """Predictions (-1 for unmapped) for NHWC uint8 images on the device."""
        import time
        x = batch_nhwc.permute(0, 3, 1, 2).float().div_(255)  # channels_last strides already
        t = time.perf_counter()
        with torch.inference_mode(), self._autocast():
            logits = self.model(x)
        pred, _ = decide(self.model, logits.float(), self.mapping)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.stats.forward_seconds += time.perf_counter() - t
        self.stats.batches += 1
        self.stats.pairs += int(batch_nhwc.shape[0])
        return pred

    def predict_backgrounds(self) -> torch.Tensor:
        """Each background's own prediction: the prior for which backgrounds fool whom."""
        preds = [self.predict_uint8(self.backgrounds[i:i + self.batch_size])
                 for i in range(0, self.num_bg, self.batch_size)]
        self.bg_pred = torch.cat(preds).cpu()
        return self.bg_pred

    # -- ordering -----------------------------------------------------------------------------
    def order_for(self, label: int) -> torch.Tensor:
        """Background indices, most likely to fool a class-`label` foreground first.

        Backgrounds of other classes (or, after `predict_backgrounds`, predicted as another class)
        come first, then by how many class-`label` foregrounds they have fooled so far, then by
        how many foregrounds of any class. The class prior is free;
        the prediction prior costs one forward per background, worth it only when foregrounds
        far outnumber backgrounds.
        """
        other = self.bg_pred != label if self.bg_pred is not None else self.bg_labels != label
        by_class = self.class_fool_counts[:, label] if label < self.class_fool_counts.shape[1] else 0
        score = other.double() * 1e12 + by_class * 1e6 + self.fool_counts
        return torch.argsort(score, descending=True, stable=True)

    # -- verdicts -----------------------------------------------------------------------------
    def verdicts(self, fg_images: torch.Tensor, fg_masks: torch.Tensor, fg_labels: Sequence[int],
                 indices: Sequence[int], on_result: Optional[Callable[[FgResult], None]] = None,
                 progress: bool = True) -> List[FgResult]:
        """Verdicts for the foregrounds `indices` (positions into fg_images/fg_masks/fg_labels).

        Foregrounds are packed into shared batches; each contributes a chunk of its ordered
        backgrounds that doubles after every miss, and leaves at its first fooling background.
        """
        queue = list(indices)[::-1]
        active: List[dict] = []
        results: List[FgResult] = []
        bar = console.progress(enabled=progress, total=len(indices), desc="challenge", unit="fg")
        while queue or active:
            while queue and len(active) < self.batch_size:
                i = queue.pop()
                y = int(fg_labels[i])
                active.append({"i": i, "y": y, "order": self.order_for(y).to(self.device), "pos": 0, "chunk": 1,
                               "img": fg_images[i].to(self.device), "mask": fg_masks[i].to(self.device)[..., None]})
            parts, spans, room = [], [], self.batch_size
            for s in active:
                if room == 0:
                    break
                n = min(s["chunk"], self.num_bg - s["pos"], room)
                idx = s["order"][s["pos"]:s["pos"] + n]
                parts.append(torch.where(s["mask"], s["img"], self.backgrounds[idx]))
                spans.append((s, idx, n))
                room -= n
            preds = self.predict_uint8(torch.cat(parts)).cpu()
            offset, still = 0, []
            done_ids = set()
            for s, idx, n in spans:
                p = preds[offset:offset + n]
                offset += n
                wrong = (p != s["y"]).nonzero()
                s["pos"] += n
                if len(wrong):
                    k = int(wrong[0])
                    bg = int(idx[k])
                    foolers = idx[p != s["y"]].cpu()
                    self.fool_counts[foolers] += 1
                    if s["y"] < self.class_fool_counts.shape[1]:
                        self.class_fool_counts[foolers, s["y"]] += 1
                    r = FgResult(s["i"], True, s["pos"] - n + k + 1, bg, int(p[k]))
                elif s["pos"] >= self.num_bg:
                    r = FgResult(s["i"], False, self.num_bg)
                else:
                    s["chunk"] = min(2 * s["chunk"], self.max_chunk)
                    continue
                done_ids.add(id(s))
                results.append(r)
                bar.update(1)
                if on_result is not None:
                    on_result(r)
            active = [s for s in active if id(s) not in done_ids]
            bar.set_postfix(pairs_s=f"{self.stats.pairs / max(bar.format_dict['elapsed'], 1e-9):.0f}")
        bar.close()
        return results

    def full_row(self, image: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
        """Predictions of one foreground against every background (uint8, 255 = unmapped)."""
        img = image.to(self.device)
        m = mask.to(self.device)[..., None]
        out = []
        for i in range(0, self.num_bg, self.batch_size):
            out.append(self.predict_uint8(torch.where(m, img, self.backgrounds[i:i + self.batch_size])).cpu())
        row = torch.cat(out)
        return torch.where(row < 0, torch.full_like(row, UNMAPPED), row).numpy().astype(np.uint8)


# -- analyses of the full prediction matrix (pure functions) ------------------------------------
def attack_success_rates(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray) -> np.ndarray:
    """ASR of each background b of class c: share of foregrounds of other classes predicted c."""
    asr = np.zeros(len(bg_labels))
    for c in np.unique(bg_labels):
        cols = bg_labels == c
        rows = fg_labels != c
        if rows.any():
            asr[cols] = (matrix[np.ix_(rows, cols)] == c).mean(axis=0)
    return asr


def class_fool_rates(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray,
                     num_classes: int) -> np.ndarray:
    """For class c: share of non-c foregrounds predicted c with at least one class-c background."""
    rates = np.full(num_classes, np.nan)
    for c in range(num_classes):
        rows = fg_labels != c
        cols = bg_labels == c
        if rows.any() and cols.any():
            rates[c] = (matrix[np.ix_(rows, cols)] == c).any(axis=1).mean()
    return rates


def verdicts_from_matrix(matrix: np.ndarray, fg_labels: np.ndarray) -> np.ndarray:
    """fooled[i] = any background predicted != y_i (255, unmapped, is never a label)."""
    return (matrix != fg_labels[:, None].astype(matrix.dtype)).any(axis=1)
