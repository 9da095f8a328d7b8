"""The Backgrounds Challenge engine: exact verdicts of upstream's `challenge_eval.py`, much faster.

A foreground (`original` image x `fg_mask`) is *fooled* if at least one `only_bg_t` background B
(every class, every image, its own included) gives pred(B*(1-m) + F*m) != y. Since m is 0/1 the
composite is an exact pixel selection, so compositing in uint8 and then dividing by 255 gives
bit-identical inputs to upstream's float arithmetic.

Where the speed comes from, without changing any verdict:
- every background is decoded once and held as one uint8 tensor on the compute device;
- composites are built on the device, several foregrounds sharing one batch, by one gather per
  batch (the orders and counts that choose them live on the CPU);
- each foreground tries the backgrounds most likely to fool it first, in chunks that grow
  geometrically, and stops at the first fooling background. "Most likely" is learnt during the
  run from every composite evaluated: per foreground class, each background's rate of fooling so
  far (`scores_for`), so a background that fools one foreground is tried first on the next. A
  foreground that is never fooled still sees every background, so the verdict is that of the
  exhaustive loop;
- batches stay full: when fewer foregrounds are active than a batch holds (the tail of a run or
  of a chunk), the spare room goes to survivors (foregrounds that have already tried
  `fill_after` backgrounds) beyond their doubling chunk. A survivor is mostly never fooled and
  must see every background anyway, so this costs no extra pairs in the common case;
- `precision='bf16-verified'` runs the forward in bf16 and recomputes near-ties in fp32
  (`precision.VerifiedPredictor`), so predictions, and hence verdicts, stay those of fp32.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import numpy as np
import torch
from ... import console

from ...classes import Mapping
from ...models.spec import BgModel
from .config import DEFAULT_SAFETY, PRECISIONS
from .rank import top_backgrounds  # noqa: F401 (re-exported)
from .precision import VerifiedPredictor
from ..predict import decide

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
        precision: 'fp32' (exact, default), 'bf16-verified' (bf16 with fp32 recomputation of
            near-ties: the predictions of fp32), or 'bf16'/'fp16' (plain autocast, not exact).
        max_chunk: most backgrounds one foreground's doubling chunk reaches (spare room in a batch
            that is not full may give it more).
        prior_weight, same_class_prior: the ordering's prior (see `scores_for`).
        adapt_until: a foreground takes each chunk in the freshly learnt order until it has tried
            this many backgrounds; then its order is frozen.
        fill_after: spare room in a batch goes to foregrounds that have tried this many.
        seed: of the ordering's tie-breaking jitter (pairs evaluated depend on it, verdicts never).
        verify_safety: bf16-verified's safety factor on the measured spread of logit deviations.
    """

    model: BgModel
    backgrounds: torch.Tensor
    bg_labels: torch.Tensor
    mapping: Mapping | str = Mapping.ARGMAX
    batch_size: int = 64
    precision: str = "fp32"
    max_chunk: int = 32
    verify_safety: float = DEFAULT_SAFETY
    prior_weight: float = 4.0
    same_class_prior: float = 0.25
    adapt_until: int = 128
    fill_after: int = 32
    seed: int = 0
    bg_pred: Optional[torch.Tensor] = None
    fool_counts: torch.Tensor = field(default=None)
    stats: EngineStats = field(default_factory=EngineStats)

    def __post_init__(self):
        self.device = self.backgrounds.device
        self.num_bg = int(self.backgrounds.shape[0])
        self.bg_labels = torch.as_tensor(self.bg_labels).cpu()  # the ordering's bookkeeping lives on the CPU
        if self.fool_counts is None:
            self.fool_counts = torch.zeros(self.num_bg, dtype=torch.float64)
        self.num_labels = int(self.bg_labels.max()) + 1 if len(self.bg_labels) else 1
        self.class_fool_counts = torch.zeros(self.num_bg, self.num_labels, dtype=torch.float64)
        self.tries = torch.zeros(self.num_bg, dtype=torch.float64)
        self._rng = torch.Generator().manual_seed(self.seed)
        self._label_tries = torch.zeros(4, dtype=torch.float64)  # fools, tries: same class; other class
        self.class_tries = torch.zeros(self.num_bg, self.num_labels, dtype=torch.float64)
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
    def scores_for(self, label: int) -> torch.Tensor:
        """How likely each background is to fool a class-`label` foreground (higher first).

        The estimated rate at which it has fooled class-`label` foregrounds so far,
        (fools + a * g) / (tries + a), with a = `prior_weight` and every composite evaluated
        counted as a try, shrunk towards a prior g: its rate over foregrounds of every class,
        (fools_all + 2 m) / (tries_all + 2), where m is the prior rate of an untried background of
        the foreground's own class (or, after `predict_backgrounds`, predicted as it) or of another
        class (`_class_priors`, learnt as the run goes): a model that follows backgrounds is rarely
        fooled by its own class's, while what fools a robust model has little to do with the
        background's class. A background tried on many class-`label` foregrounds without fooling
        one sinks; one that fools rises, whatever its class.
        A tiny seeded jitter breaks ties, so foregrounds that start together, knowing nothing yet,
        try different backgrounds and the rates are learnt faster.
        """
        other = self.bg_pred != label if self.bg_pred is not None else self.bg_labels != label
        same_rate, other_rate = self._class_priors()
        g = (self.fool_counts + 2 * torch.where(other, other_rate, same_rate)) / (self.tries + 2)
        if label < self.num_labels:
            fools, tries = self.class_fool_counts[:, label], self.class_tries[:, label]
        else:
            fools = tries = torch.zeros_like(g)
        rate = (fools + self.prior_weight * g) / (tries + self.prior_weight)
        return rate + 1e-7 * torch.rand(rate.shape, dtype=rate.dtype, generator=self._rng)

    def _class_priors(self) -> tuple:
        """Prior fooling rates of an untried background of the foreground's own class and of another
        class: the rates over all tries so far (starting from `same_class_prior` times the other
        rate, worth 4 tries each), halved, since tries gather on the best foolers."""
        sf, st, of, ot = self._label_tries.tolist()
        p = (sf + of + 1) / (st + ot + 2)
        return (sf + 4 * self.same_class_prior * p) / (st + 4) / 2, (of + 4 * p) / (ot + 4) / 2

    def order_for(self, label: int) -> torch.Tensor:
        """Background indices, most likely to fool a class-`label` foreground first (see `scores_for`)."""
        return torch.argsort(self.scores_for(label), descending=True)

    def warm(self, bg: int, label: int) -> None:
        """Count one earlier verdict (a class-`label` foreground fooled by background `bg`) in the ordering."""
        self._learn(torch.tensor([bg]), torch.tensor([True]), label)

    def _learn(self, idx: torch.Tensor, wrong: torch.Tensor, label: int) -> None:
        """Composites of backgrounds `idx` (CPU) with a class-`label` foreground; `wrong` marks the foolers."""
        foolers = idx[wrong]
        same = self.bg_labels[idx] == label if self.bg_pred is None else self.bg_pred[idx] == label
        self._label_tries += torch.tensor([float((wrong & same).sum()), float(same.sum()),
                                           float((wrong & ~same).sum()), float((~same).sum())], dtype=torch.float64)
        self.tries[idx] += 1
        self.fool_counts[foolers] += 1
        if label < self.num_labels:
            self.class_tries[idx, label] += 1
            self.class_fool_counts[foolers, label] += 1

    # -- verdicts -----------------------------------------------------------------------------
    def verdicts(self, fg_images: torch.Tensor, fg_masks: torch.Tensor, fg_labels: Sequence[int],
                 indices: Sequence[int], on_result: Optional[Callable[[FgResult], None]] = None,
                 progress: bool = True) -> List[FgResult]:
        """Verdicts for the foregrounds `indices` (positions into fg_images/fg_masks/fg_labels).

        Foregrounds are packed into shared batches; each contributes a chunk of its untried
        backgrounds that doubles after every miss, and leaves at its first fooling background.
        While a foreground has tried fewer than `adapt_until` backgrounds, its next chunk is taken
        in the current order for its class, which learns from every composite evaluated so far;
        after that its order is frozen (a survivor is most likely never fooled, and slicing a
        fixed order costs nothing).
        """
        queue = list(indices)[::-1]
        active: List[dict] = []
        results: List[FgResult] = []
        images = fg_images.to(self.device)  # every composite of a batch is built by one gather
        masks = fg_masks.to(self.device)[..., None]
        bar = console.progress(enabled=progress, total=len(indices), desc="challenge", unit="fg")
        while queue or active:
            while queue and len(active) < self.batch_size:
                i = queue.pop()
                active.append({"i": i, "y": int(fg_labels[i]), "pos": 0, "chunk": 1, "order": None,
                               "tried": torch.zeros(self.num_bg, dtype=torch.bool)})
            spans, fg_of, bg_of = [], [], []
            for s, n in zip(active, self._takes(active)):
                if n == 0:
                    continue
                if s["order"] is not None:
                    idx = s["order"][s["pos"]:s["pos"] + n]
                else:
                    o = self.order_for(s["y"])
                    untried = o[~s["tried"][o]]
                    idx = untried[:n]
                    s["tried"][idx] = True
                    if s["pos"] + n >= self.adapt_until:  # freeze the rest in the current order
                        s["order"] = torch.cat([torch.full((s["pos"],), -1, dtype=idx.dtype), idx, untried[n:]])
                        s["tried"] = None  # (positions before pos are never read again)
                spans.append((s, idx, n))
                fg_of.append(torch.full((n,), s["i"], dtype=torch.long))
                bg_of.append(idx)
            fi = torch.cat(fg_of).to(self.device, non_blocking=True)
            bi = torch.cat(bg_of).to(self.device, non_blocking=True)
            batch = torch.where(masks[fi], images[fi], self.backgrounds[bi])
            preds = self.predict_uint8(batch).cpu()
            offset = 0
            done_ids = set()
            for s, idx, n in spans:
                p = preds[offset:offset + n]
                offset += n
                wrong_mask = p != s["y"]
                self._learn(idx, wrong_mask, s["y"])
                wrong = wrong_mask.nonzero()
                s["pos"] += n
                if len(wrong):
                    k = int(wrong[0])
                    r = FgResult(s["i"], True, s["pos"] - n + k + 1, int(idx[k]), int(p[k]))
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

        First each takes its doubling chunk, in admission order, while the batch has room. Room
        still left (fewer active foregrounds than a batch holds: the tail of a run or a chunk) is
        shared among the survivors, foregrounds that have tried at least `fill_after` backgrounds:
        they are mostly never fooled and must see every background anyway.
        """
        room = self.batch_size
        takes = []
        for s in active:
            n = min(s["chunk"], self.num_bg - s["pos"], room)
            takes.append(n)
            room -= n
        while room > 0:
            open_ = [j for j, s in enumerate(active)
                     if self.num_bg - s["pos"] > takes[j] and s["pos"] >= self.fill_after]
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
