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
  fooled still sees every background, so the verdict is that of the exhaustive loop;
- batches stay full: when fewer foregrounds are active than a batch holds (the tail of a run or
  of a chunk), the spare room goes to the active foregrounds beyond their doubling chunk. Those are
  the survivors, which are mostly never fooled and must see every background anyway;
- `precision='bf16-verified'` runs the forward in bf16 and recomputes near-ties in fp32
  (`precision.VerifiedPredictor`), so predictions, and hence verdicts, stay those of fp32.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
import torch
from tqdm import tqdm

from ..classes import Mapping
from ..models.spec import BgModel
from .precision import DEFAULT_SAFETY, VerifiedPredictor
from .predict import decide

UNMAPPED = 255  # a -1 prediction (no IN-9 class) in the uint8 prediction matrix
PRECISIONS = ("fp32", "bf16-verified", "bf16", "fp16")


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
        precision: 'fp32' (exact, default), 'bf16-verified' (bf16 with fp32 recomputation of
            near-ties: the predictions of fp32), or 'bf16'/'fp16' (plain autocast, not exact).
        max_chunk: most backgrounds one foreground's doubling chunk reaches (spare room in a batch
            that is not full may give it more).
        verify_safety: bf16-verified's safety factor on the measured logit deviation.
    """

    model: BgModel
    backgrounds: torch.Tensor
    bg_labels: torch.Tensor
    mapping: Mapping | str = Mapping.ARGMAX
    batch_size: int = 64
    precision: str = "fp32"
    max_chunk: int = 32
    verify_safety: float = DEFAULT_SAFETY
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
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.precision == "fp16" and self.device.type != "cuda":
            raise ValueError("fp16 needs a GPU; use fp32 (exact) on the CPU")
        if self.device.type == "cuda":
            self.model = self.model.to(memory_format=torch.channels_last)
        self.verifier = (VerifiedPredictor(self.model, self.mapping, self.device.type, safety=self.verify_safety)
                         if self.precision == "bf16-verified" else None)

    # -- prediction ---------------------------------------------------------------------------
    def _autocast(self):
        if self.precision in ("fp32", "bf16-verified"):
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def predict_uint8(self, batch_nhwc: torch.Tensor) -> torch.Tensor:
        """Predictions (-1 for unmapped) for NHWC uint8 images on the device."""
        import time
        x = batch_nhwc.permute(0, 3, 1, 2).float().div_(255)  # channels_last strides already
        t = time.perf_counter()
        if self.verifier is not None:
            pred = self.verifier(x)
        else:
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
        bar = tqdm(total=len(indices), desc="challenge", unit="fg", disable=not progress, leave=False)
        while queue or active:
            while queue and len(active) < self.batch_size:
                i = queue.pop()
                y = int(fg_labels[i])
                active.append({"i": i, "y": y, "order": self.order_for(y).to(self.device), "pos": 0, "chunk": 1,
                               "img": fg_images[i].to(self.device), "mask": fg_masks[i].to(self.device)[..., None]})
            parts, spans = [], []
            for s, n in zip(active, self._takes(active)):
                if n == 0:
                    continue
                idx = s["order"][s["pos"]:s["pos"] + n]
                parts.append(torch.where(s["mask"], s["img"], self.backgrounds[idx]))
                spans.append((s, idx, n))
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

    def _takes(self, active: List[dict]) -> List[int]:
        """How many backgrounds each active foreground contributes to the next batch.

        First each takes its doubling chunk, in admission order, while the batch has room; room
        still left (fewer active foregrounds than a batch holds) is shared among those with
        backgrounds left, so the batch stays full whenever enough pairs remain.
        """
        room = self.batch_size
        takes = []
        for s in active:
            n = min(s["chunk"], self.num_bg - s["pos"], room)
            takes.append(n)
            room -= n
        while room > 0:
            open_ = [j for j, s in enumerate(active) if self.num_bg - s["pos"] > takes[j]]
            if not open_:
                break
            share = -(-room // len(open_))
            for j in open_:
                extra = min(share, self.num_bg - active[j]["pos"] - takes[j], room)
                takes[j] += extra
                room -= extra
                if room == 0:
                    break
        return takes

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


def top_backgrounds(asr: np.ndarray, bg_labels: np.ndarray, k: int = 5) -> Dict[int, List[int]]:
    """Indices of the k highest-ASR backgrounds of each class (ties by index)."""
    out = {}
    for c in np.unique(bg_labels):
        idx = np.nonzero(bg_labels == c)[0]
        order = idx[np.lexsort((idx, -asr[idx]))]
        out[int(c)] = order[:k].tolist()
    return out
