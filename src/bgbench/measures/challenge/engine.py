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
  geometrically, and stops at the first fooling background (`search.VerdictSearch`). "Most
  likely" is learnt during the run from every composite evaluated: per foreground class, each
  background's rate of fooling so far (`scores_for`). A foreground that is never fooled still sees
  every background, so the verdict is that of the exhaustive loop;
- batches stay full: spare room goes to survivors beyond their doubling chunk (`search`);
- on a card the host never makes the device wait: indices go up from pinned memory and results
  come down into it without blocking (`evaluation.feed`), forwards are timed by CUDA events, and the
  search packs and launches each next batch while the device computes the last one
  (`speculate`), so its only waits are on results that are due, with a batch queued behind them.

Precision. 'fp32' (the default) is exact: on CUDA too, since every fp32 forward runs under
`evaluation.numerics.strict_fp32` (no TF32). 'bf16-verified' decides in bf16 and proves what it can of fp32's
decisions; all of it lives in `verified`, imported only for it, whose `Verifier` the engine and
its searches call at a few hooks (`verifier`: calibrate before a call, decide a search's
composites, re-examine results when an audit raises delta). 'tf32' (CUDA only) rounds the
inputs of matmuls and convolutions to TF32; 'bf16' and 'fp16' are plain autocast; none of the
three is exact.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Sequence

import torch

from ...classes import Mapping
from ...evaluation.predict import decide
from ...models.spec import BgModel
from .config import DEFAULT_SAFETY, ChallengePrecision
from ...evaluation.numerics import forward_context, fp32_settings, strict_fp32
from .search import FgResult, OnResult, VerdictSearch, composite, full_results
from ...evaluation.feed import Fetch, to_device, to_unit

if TYPE_CHECKING:
    from .verified import Verifier

#: the precisions whose fp32 forwards (all of fp32's; bf16-verified's clean images, backgrounds and checks) run strict
STRICT = ("fp32", "bf16-verified")


@dataclass
class EngineStats:
    """Composites the searches evaluated (pairs), their batches, and the forwards' seconds.

    On CUDA a forward's seconds are read from two events around it, folded in when they are asked
    for (`forward_seconds`), never by waiting on the device after each forward. `wasted` counts
    composites of speculative batches that were thrown away (`search.VerdictSearch`): not pairs.
    """

    pairs: int = 0
    batches: int = 0
    wasted: int = 0
    seconds: float = 0.0  # folded so far
    events: list = field(default_factory=list, repr=False)  # (start, end) CUDA events not folded yet

    @property
    def forward_seconds(self) -> float:
        """Seconds in forwards so far (on CUDA this waits for the last recorded forward)."""
        self.fold(wait=True)
        return self.seconds

    def fold(self, wait: bool = False) -> None:
        """Fold the timed forwards' events into `seconds`: all of them with `wait`, else those
        already done (an event query, no wait), so that a long run keeps few events."""
        while self.events and (wait or self.events[0][1].query()):
            start, end = self.events.pop(0)
            end.synchronize()  # (at once for an event a query found done)
            self.seconds += start.elapsed_time(end) / 1000


@dataclass
class ChallengeEngine:
    """Verdicts (and, in full mode, whole prediction rows) for foregrounds against all backgrounds.

    Args:
        model: a BgModel taking [0,1] NCHW input.
        backgrounds: NHWC uint8 tensor of every only_bg_t image, on the compute device.
        bg_labels: class of each background.
        mapping: decision rule for 1000-class models.
        batch_size: composites per forward pass.
        precision: 'fp32' (exact, default), 'bf16-verified' (bf16; fooled verdicts exact, survivors
            as good as the audits), or 'tf32', 'bf16', 'fp16' (TF32 or plain autocast, not exact); checked by
            `ChallengeConfig`.
        max_chunk: most backgrounds one foreground's doubling chunk reaches (spare room in a batch
            that is not full may give it more).
        prior_weight, same_class_prior: the ordering's prior (see `scores_for`).
        adapt_until: a foreground takes each chunk in the freshly learnt order until it has tried
            this many backgrounds; then its order is frozen.
        fill_after: spare room in a batch goes to foregrounds that have tried this many.
        seed: of the ordering's tie-breaking jitter (and bf16-verified's draws); pairs evaluated
            depend on it, verdicts never.
        verify_safety: bf16-verified's safety factor on the measured spread of logit deviations.
        speculate: a search launches its next batch before the last one's results are back, as if
            nothing in it fooled, and throws it away when something did (`search.VerdictSearch`):
            the device never waits on the host, and the batches are the same either way. None:
            on CUDA only (on a CPU nothing runs while the host packs, and a thrown-away batch is
            pure cost).
    """

    model: BgModel
    backgrounds: torch.Tensor
    bg_labels: torch.Tensor
    mapping: Mapping = Mapping.ARGMAX
    batch_size: int = 64
    precision: ChallengePrecision = ChallengePrecision.FP32
    max_chunk: int = 32
    verify_safety: float = DEFAULT_SAFETY
    prior_weight: float = 4.0
    same_class_prior: float = 0.25
    adapt_until: int = 128
    fill_after: int = 32
    seed: int = 0
    speculate: Optional[bool] = None
    stats: EngineStats = field(default_factory=EngineStats)

    def __post_init__(self):
        # kinds converted once, here
        self.precision, self.mapping = ChallengePrecision(self.precision), Mapping(self.mapping)
        self.device, self.num_bg = self.backgrounds.device, int(self.backgrounds.shape[0])
        self.speculate = self.device.type == "cuda" if self.speculate is None else self.speculate
        if self.device.type == "cuda":
            self.model = self.model.to(memory_format=torch.channels_last)
        self.fp32_user_settings = fp32_settings()  # recorded: what fp32 would have meant without strict_fp32
        self.verifier: Optional[Verifier] = None  # bf16-verified's hooks, the module imported only for it
        if self.precision == "bf16-verified":
            from .verified import Verifier
            self.verifier = Verifier(self, safety=self.verify_safety, seed=self.seed)
        self.bg_labels = torch.as_tensor(self.bg_labels).cpu()  # the ordering's bookkeeping lives on the CPU
        self.num_labels = int(self.bg_labels.max()) + 1 if len(self.bg_labels) else 1
        # per background (and per background and foreground class): composites that fooled, and all tried
        self.fool_counts, self.tries = (torch.zeros(self.num_bg, dtype=torch.float64) for _ in range(2))
        self.class_fool_counts, self.class_tries = (torch.zeros(self.num_bg, self.num_labels, dtype=torch.float64)
                                                    for _ in range(2))
        self._rng = torch.Generator().manual_seed(self.seed)
        self._label_tries = torch.zeros(4, dtype=torch.float64)  # fools, tries: same class; other class

    # -- prediction ---------------------------------------------------------------------------
    def numerics(self) -> dict:
        """What the run's arithmetic was, for its record."""
        return {"precision": self.precision,
                "fp32": "strict: TF32 and reduced-precision fp32 off for every fp32 forward"
                if self.precision in STRICT else None,
                "user_fp32_settings": self.fp32_user_settings}

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """Time a forward (pairs are counted apart, `count`: only the search's own composites).

        On CUDA the forward is timed by two events on the stream, read later (`EngineStats`): no
        wait on the device here."""
        if self.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            self.stats.events.append((start, end))
            if len(self.stats.events) > 64:
                self.stats.fold()
        else:
            t = time.perf_counter()
            yield
            self.stats.seconds += time.perf_counter() - t

    def count(self, n: int) -> None:
        """Count a batch of `n` composites a search evaluated and kept as pairs."""
        self.stats.batches += 1
        self.stats.pairs += n

    @staticmethod
    def _float(batch_nhwc: torch.Tensor) -> torch.Tensor:
        return to_unit(batch_nhwc.permute(0, 3, 1, 2))  # channels_last strides already; the CPU's numbers on CUDA

    def _plain(self, x: torch.Tensor) -> torch.Tensor:
        """fp32 (strict; bf16-verified's clean images and backgrounds too), or tf32, or plain bf16/fp16
        autocast: eval's arithmetic for the same name."""
        context = strict_fp32() if self.precision in STRICT else forward_context(self.precision, self.device)
        with torch.inference_mode(), context:
            logits = self.model(x)
        return decide(self.model, logits.float(), self.mapping)[0]

    def predict_uint8(self, batch_nhwc: torch.Tensor) -> torch.Tensor:
        """Predictions (-1 for unmapped) for NHWC uint8 images on the device, each on its own: in
        fp32 for 'fp32' and 'bf16-verified' (clean images and backgrounds are few), else autocast."""
        with self.timed():
            return self._plain(self._float(batch_nhwc))

    def composites(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor,
                   bi: torch.Tensor) -> Iterator[torch.Tensor]:
        """The composites (foreground fi[k] over background bi[k]), [0,1] NCHW on the device, in
        batches of `batch_size`."""
        fi, bi = to_device(fi, self.device), to_device(bi, self.device)  # once, from pinned memory
        for s in range(0, len(fi), self.batch_size):
            yield self._float(composite(images, masks, self.backgrounds, fi[s:s + self.batch_size],
                                        bi[s:s + self.batch_size]))

    def forwards(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor, bi: torch.Tensor,
                 forward: Callable[[torch.Tensor], Any]) -> list:
        """`forward` of each batch of the composites (fi[k], bi[k]), each timed (`timed`)."""
        out = []
        for x in self.composites(images, masks, fi, bi):
            with self.timed():
                out.append(forward(x))
        return out

    def launch_composites(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor,
                          bi: torch.Tensor) -> Fetch:
        """Predictions of the composites (fi[k], bi[k]) in this engine's precision, on their way to
        the host (`Fetch.wait`): the forwards are queued and nothing waits on the device. The search
        counts them as pairs when it keeps them (it may throw a batch away)."""
        out = self.forwards(images, masks, fi, bi, self._plain)
        return Fetch([torch.cat(out) if out else torch.zeros(0, dtype=torch.long, device=self.device)])

    # -- ordering -----------------------------------------------------------------------------
    def scores_for(self, label: int) -> torch.Tensor:
        """How likely each background is to fool a class-`label` foreground (higher first).

        The estimated rate at which it has fooled class-`label` foregrounds so far,
        (fools + a * g) / (tries + a), with a = `prior_weight` and every composite evaluated
        counted as a try, shrunk towards a prior g: its rate over foregrounds of every class,
        (fools_all + 2 m) / (tries_all + 2), where m is the prior rate of an untried background of
        the foreground's own class or of another class (`_class_priors`, learnt as the run goes): a model that follows backgrounds is rarely
        fooled by its own class's, while what fools a robust model has little to do with the
        background's class. A background tried on many class-`label` foregrounds without fooling
        one sinks; one that fools rises, whatever its class.
        A tiny seeded jitter breaks ties, so foregrounds that start together, knowing nothing yet,
        try different backgrounds and the rates are learnt faster.
        """
        other = self.bg_labels != label
        same_rate, other_rate = self._class_priors()
        g = (self.fool_counts + 2 * torch.where(other, other_rate, same_rate)) / (self.tries + 2)
        fools, tries = ((self.class_fool_counts[:, label], self.class_tries[:, label]) if label < self.num_labels
                        else (torch.zeros_like(g),) * 2)
        rate = (fools + self.prior_weight * g) / (tries + self.prior_weight)
        return rate + 1e-7 * torch.rand(rate.shape, dtype=rate.dtype, generator=self._rng)

    def _class_priors(self) -> tuple:
        """Prior fooling rates of an untried background of the foreground's own class and of another
        class: the rates over all tries so far (starting from `same_class_prior` times the other
        rate, worth 4 tries each), halved, since tries gather on the best foolers."""
        sf, st, of, ot = self._label_tries.tolist()
        p = (sf + of + 1) / (st + ot + 2)
        return (sf + 4 * self.same_class_prior * p) / (st + 4) / 2, (of + 4 * p) / (ot + 4) / 2

    def ordering_state(self) -> tuple:
        """What a search's speculative step may change of the ordering (the tries it counts and
        the jitter it draws; a guess that nothing fooled adds no fools), for `restore_ordering`."""
        return self.tries.clone(), self.class_tries.clone(), self._label_tries.clone(), self._rng.get_state()

    def restore_ordering(self, state: tuple) -> None:
        """Put back what `ordering_state` saved: a speculative step whose guess was wrong never happened."""
        self.tries, self.class_tries, self._label_tries = state[0], state[1], state[2]
        self._rng.set_state(state[3])

    def learn(self, idx: torch.Tensor, wrong: torch.Tensor, label) -> None:
        """Count composites of backgrounds `idx` (CPU) with foregrounds of class `label` (one class,
        or a tensor of one per composite) in the ordering; `wrong` marks the foolers. The search
        calls it once a batch for all its foregrounds: the counts are whole numbers that add up, so
        one call counts exactly what a call per foreground would, at a fraction of the host's time."""
        label = torch.as_tensor(label, dtype=torch.long).expand(idx.shape)
        same = self.bg_labels[idx] == label
        self._label_tries += torch.tensor([float((wrong & same).sum()), float(same.sum()),
                                           float((wrong & ~same).sum()), float((~same).sum())], dtype=torch.float64)
        ones = torch.ones(len(idx), dtype=torch.float64)
        self.tries.index_put_((idx,), ones, accumulate=True)
        self.fool_counts.index_put_((idx[wrong],), ones[wrong], accumulate=True)
        known = label < self.num_labels
        self.class_tries.index_put_((idx[known], label[known]), ones[known], accumulate=True)
        fooled = known & wrong
        self.class_fool_counts.index_put_((idx[fooled], label[fooled]), ones[fooled], accumulate=True)

    # -- verdicts -----------------------------------------------------------------------------
    def verdicts(self, fg_images: torch.Tensor, fg_masks: torch.Tensor, fg_labels: Sequence[int],
                 indices: Sequence[int], on_result: OnResult = None, progress: bool = True) -> List[FgResult]:
        """Verdicts for the foregrounds `indices` (positions into fg_images/fg_masks/fg_labels).

        Each result is reported to `on_result` as soon as it is known. With bf16-verified a
        survivor may be reported again, fooled, if a later audit raises delta above one of its
        kept margins (`Verifier.reexamine`); the returned list holds the final verdicts.
        """
        return self._verified(fg_images, fg_masks, fg_labels, indices, on_result, lambda images, masks: VerdictSearch(
            self, images, masks, fg_labels, on_result, progress).run(indices))

    def full_rows(self, fg_images: torch.Tensor, fg_masks: torch.Tensor, fg_labels: Sequence[int],
                  indices: Sequence[int], on_result: OnResult = None) -> List[FgResult]:
        """Whole prediction rows (`FgResult.row`) and their verdicts, for the foregrounds `indices`:
        what --full computes.

        With bf16-verified the first fooling entry of each row is confirmed in fp32 (so the verdict
        is exact) and rows are re-examined when delta rises, like `verdicts`.
        """
        return self._verified(fg_images, fg_masks, fg_labels, indices, on_result, lambda images, masks: full_results(
            self, images, masks, fg_labels, indices, on_result))

    def _verified(self, fg_images: torch.Tensor, fg_masks: torch.Tensor, fg_labels: Sequence[int],
                  indices: Sequence[int], on_result: OnResult, compute) -> List[FgResult]:
        """`compute(images, masks)` over the foregrounds on the device; with bf16-verified, delta
        calibrated before and the results re-examined after."""
        images, masks = to_device(fg_images, self.device), to_device(fg_masks, self.device)
        if self.verifier is not None:
            self.verifier.calibrate(images, masks, indices)
        return (self.verifier.reexamine(images, masks, fg_labels, compute(images, masks), on_result)
                if self.verifier is not None else compute(images, masks))
