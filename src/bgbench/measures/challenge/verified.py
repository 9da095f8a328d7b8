"""`bf16-verified`: composites predicted in bf16, with every fp32 decision the run can prove kept.

Everything bf16-verified adds to the challenge lives here, so that the fp32 path (`engine`,
`search`, `runner`) reads without it. They import this module only for a bf16-verified run, and
call it at a few hooks:
- `Verifier` is the engine's (`ChallengeEngine.verifier`, None otherwise): it calibrates before
  a call's first bf16 decision, decides each search's composites (`Verifier.checks`) and
  re-examines results when an audit raises delta (`Verifier.reexamine`);
- `VerifiedRun` is the runner's (`_Invocation.verified`): it restores an earlier invocation's
  delta and audit counts, stores each foreground's near ties with its verdict and a raised delta at
  once, agrees on delta across torchrun ranks at every chunk boundary and re-examines the stored
  survivors it reaches, and totals the audit counts over ranks;
- `report_rows` and `report_lines` are what a run's report says of it.

What is exact and what is audited:
- **Fooled verdicts are exact.** The composite that fools is recomputed in fp32 before the verdict
  is given; if fp32 disagrees, the search goes on.
- **A survivor's verdict is as good as the audits.** Each of its bf16 decisions is proven equal to
  fp32's by the margin lemma below *if* that input's deviation spread is at most delta. delta is
  measured on audits, not known; a survivor's verdict assumes that the spread on the inputs no audit
  saw stays within delta.

The margin lemma. For one input, let d = bf16 logits - fp32 logits (a vector over the classes) and
let eps be its spread, max(d) - min(d). Let the bf16 logits decide class t. The *decision margin* m
is how far the bf16 logits are from deciding anything else:
- a model over the dataset's classes: top logit minus the runner-up;
- a 1000-class model with the paper's `argmax` mapping: top logit minus the largest logit of any
  class whose IN-9 label differs from the top class's label (ImageNet classes that map to the same
  IN-9 class, or that both map to none, give the same decision, so they are not rivals);
- the `superclass` mapping: log S_t - log S_r, where S_c is the summed probability of the IN-9
  class c and r the runner-up (the softmax normaliser cancels in the ratio, and each log S_c
  moves by an amount between min(d) and max(d)).
In all three cases the gap between the winner and any rival moves by at most eps from bf16 to
fp32, so if m > eps the fp32 logits decide t as well. (The spread is at most twice the largest
absolute deviation, and often less: much of bf16's error shifts all logits alike.)

Calibration and audits. Before its first bf16 decision the predictor is calibrated on composites
drawn at random (seeded) across the call's foregrounds and every background, not on the run's first
batches: each is run in both precisions and delta = safety x the largest spread. Then every
composite whose bf16 margin is at most delta is recomputed in fp32 (`rechecked`), and so is any
with a non-finite margin. Every composite is also *audited* with probability 1/`audit_every`, drawn
from a seeded generator: run in fp32 as well, its decision taken from fp32 and its spread measured.
An audit whose spread exceeds delta is a *breach*: delta rises to safety x that spread, and every
earlier composite whose kept margin the new delta reaches is re-examined. The safety factor, the
counts and the largest spread are recorded. Every fp32 forward runs under `evaluation.numerics.strict_fp32`.

Near ties: what a foreground keeps so that a raised delta can re-examine it. Keeping every margin
would cost a number per composite, so each foreground keeps:
- its *near ties*: the bf16-decided composites its verdict rests on whose margin was at most
  `KEEP` x delta when they were decided (the `CAP` smallest at most), and
- its *floor*: the smallest margin among the bf16 decisions it did not keep.
A raised delta below the floor is settled by recomputing the near ties at or below it; a delta at
or above the floor (delta grew more than `KEEP`-fold, or the cap evicted a margin) needs the
foreground's search again. Decisions made in fp32 (rechecks, audits) carry an infinite margin and
are never kept: they are exact already.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch

from ... import console, distributed
from ...classes import Mapping, imagenet_to_in9, imagenet_to_in9_on
from ...evaluation.predict import decide
from ...models.spec import IMAGENET1K, BgModel
from .config import DEFAULT_SAFETY
from ...evaluation.numerics import forward_context
from .search import FgResult, OnResult, VerdictSearch, first_per_segment, launch_row, row_of
from ...evaluation.feed import Fetch, to_device

#: composites run in both precisions before the first bf16 decision
DEFAULT_CALIBRATION = 256
#: one composite in this many, drawn at random, is audited in fp32
DEFAULT_AUDIT_EVERY = 64
#: near ties are the margins at most this many times the delta in use when they were decided
KEEP = 4.0
#: the most near ties one foreground keeps (the smallest margins); the rest go to its floor
CAP = 256
#: counts that add up over ranks and invocations; the rest of VerifiedStats takes the largest
_SUMMED = ("composites", "calibration", "audited", "breaches", "rechecked", "confirmed", "overturned", "reexamined",
           "researched", "changed")
_LARGEST = ("max_deviation", "max_spread", "delta")


@functools.lru_cache(maxsize=None)
def _members(device: str) -> tuple:
    """The ImageNet classes of each IN-9 class, as index tensors on `device`, found once: a boolean
    mask as an index makes the host wait for the card at every batch."""
    table = imagenet_to_in9()
    return tuple(torch.as_tensor(np.nonzero(table == c)[0], device=device) for c in range(int(table.max()) + 1))


def decision_margin(logits: torch.Tensor, label_space: str, mapping: Mapping | str = Mapping.ARGMAX) -> torch.Tensor:
    """Per row: how far the logits are from a different decision (see the module docstring).

    logits: (N, C) float. Returns (N,) float; inf when no rival decision exists.
    """
    logits = logits.float()
    if label_space == IMAGENET1K and Mapping(mapping) is Mapping.ARGMAX:
        table = imagenet_to_in9_on(str(logits.device))  # made once per device: no copy, no wait per batch
        top, arg = logits.max(dim=1)
        rival = table[None, :] != table[arg][:, None]  # classes that decide something else
        return top - logits.masked_fill(~rival, float("-inf")).max(dim=1).values
    if label_space == IMAGENET1K:  # superclass: log of each IN-9 class's summed (unnormalised) probability
        logits = torch.stack([torch.logsumexp(logits[:, idx], dim=1) for idx in _members(str(logits.device))], dim=1)
    if logits.shape[1] < 2:
        return torch.full((logits.shape[0],), float("inf"), device=logits.device)
    top2 = logits.topk(2, dim=1).values
    return top2[:, 0] - top2[:, 1]


# -- the predictor: calibration, audits, delta ----------------------------------------------------
@dataclass
class VerifiedStats:
    """What a bf16-verified run checked; recorded with the run."""

    safety: float
    audit_every: int = DEFAULT_AUDIT_EVERY
    composites: int = 0  # composites decided (in bf16, or in fp32 by a recheck or an audit)
    calibration: int = 0  # composites run in both precisions before the first bf16 decision
    audited: int = 0  # composites audited: drawn at random and run in fp32 as well
    breaches: int = 0  # audits whose spread exceeded delta (each raised delta)
    max_deviation: float = 0.0  # largest |bf16 - fp32| logit deviation measured (calibration and audits)
    max_spread: float = 0.0  # largest spread of the deviations within one input (calibration and audits)
    delta: float = float("nan")  # margin threshold in use at the end
    rechecked: int = 0  # composites whose bf16 margin was <= delta, recomputed in fp32
    confirmed: int = 0  # fooling composites recomputed in fp32 before a fooled verdict
    overturned: int = 0  # of those, composites that fp32 found not fooling (the search went on)
    reexamined: int = 0  # kept composites recomputed in fp32 because delta rose above their margin
    researched: int = 0  # foregrounds searched again: a margin not kept may lie below the raised delta
    changed: int = 0  # survivor verdicts that a raised delta turned into fooled


#: predictions of a batch, and the bf16 margin behind each (inf: decided in fp32)
Decisions = NamedTuple("Decisions", [("pred", torch.Tensor), ("margin", torch.Tensor)])
#: a launched bf16 batch: its size, its logits (on the device), its decisions and margins on their way to
#: the host
Bf16Batch = NamedTuple("Bf16Batch", [("n", int), ("logits", torch.Tensor), ("fetch", Fetch)])


class VerifiedPredictor:
    """Predict in bf16 autocast: near-ties recomputed in fp32, random audits (module docstring)."""

    def __init__(self, model: BgModel, mapping: Mapping | str = Mapping.ARGMAX, device_type: str = "cpu",
                 safety: float = DEFAULT_SAFETY, seed: int = 0,
                 warn: Optional[Callable[[str], None]] = None, on_raise: Optional[Callable[[float], None]] = None):
        if safety < 1:
            raise ValueError("safety must be >= 1")
        self.model, self.mapping, self.device_type = model, mapping, device_type
        self.stats = VerifiedStats(safety=float(safety))
        self._audits = torch.Generator().manual_seed(int(seed))
        # on_raise: told each new delta an audit sets (a runner stores it at once)
        self._warn, self.on_raise = warn or console.status, on_raise

    @property
    def calibrated(self) -> bool:
        return self.stats.delta == self.stats.delta  # not NaN

    @property
    def delta(self) -> float:
        return self.stats.delta

    def _forward(self, x: torch.Tensor, bf16: bool) -> torch.Tensor:
        with torch.inference_mode(), forward_context("bf16" if bf16 else "fp32", self.device_type):
            return self.model(x).float()

    def _decide(self, logits: torch.Tensor) -> torch.Tensor:
        return decide(self.model, logits, self.mapping)[0]

    def _measure(self, fast: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
        """Per row, the spread of bf16 - fp32 deviations (rows with non-finite logits given spread 0:
        they measure nothing, and are decided in fp32 anyway); updates the largest seen."""
        d = fast - exact
        d = torch.where(torch.isfinite(d).all(dim=1)[:, None], d, torch.zeros_like(d))
        spread = d.max(dim=1).values - d.min(dim=1).values
        if len(d):
            top = Fetch([d.abs().max(), spread.max()]).wait()
            self.stats.max_deviation = max(self.stats.max_deviation, float(top[0]))
            self.stats.max_spread = max(self.stats.max_spread, float(top[1]))
        return spread

    def calibrate(self, x: torch.Tensor) -> None:
        """Run composites drawn across the run in both precisions; delta = safety x the largest spread."""
        spread = self._measure(self._forward(x, bf16=True), self._forward(x, bf16=False))
        s = self.stats
        s.calibration += len(x)
        s.delta = max(s.delta if self.calibrated else 0.0, s.safety * (float(spread.max()) if len(spread) else 0.0))

    def raise_to(self, delta: float) -> None:
        """Adopt a larger delta measured elsewhere (another rank, an earlier invocation of the run)."""
        if not self.calibrated or delta > self.stats.delta:
            self.stats.delta = float(delta)

    def __call__(self, x: torch.Tensor) -> Decisions:
        """Decisions for a float NCHW batch: bf16 where the margin exceeds delta, fp32 elsewhere."""
        return self.finish([self.launch(x)], lambda rows: self._forward(x[to_device(rows, x.device)], bf16=False))[0]

    def launch(self, x: torch.Tensor) -> "Bf16Batch":
        """Queue a float NCHW batch's bf16 forward; its decisions and margins come to the host
        without blocking (`finish` takes them)."""
        if not self.calibrated:
            raise RuntimeError("calibrate the VerifiedPredictor before its first bf16 decision")
        logits = self._forward(x, bf16=True)
        return Bf16Batch(len(x), logits, Fetch([self._decide(logits), decision_margin(
            logits, self.model.spec.label_space, self.mapping)]))

    def finish(self, batches: List["Bf16Batch"], fp32: Callable[[torch.Tensor], torch.Tensor],
               candidates: Optional[Callable[..., torch.Tensor]] = None) -> Tuple[Decisions, torch.Tensor]:
        """Decisions (CPU) of launched batches: each one's audits drawn and taken from fp32, and every
        row whose margin is at most delta (or NaN) recomputed in fp32, as batch after batch would.

        All of it costs one fp32 forward of the rows it needs (`fp32(rows)`: their fp32 logits, on the
        device; rows index the batches laid end to end), and a second only when an audit raised
        delta. `candidates(pred, margin, decided)` names rows more to compute in that forward (a
        search's likely confirmations); returns the decisions and the fp32 predictions of every row
        computed (-2 where none was).
        """
        s = self.stats
        host = [b.fetch.wait() for b in batches]  # (cat copies: the decisions are changed in place)
        pred, margin = torch.cat([h[0] for h in host]), torch.cat([h[1] for h in host]).float()
        s.composites += len(pred)
        audit = torch.cat([torch.rand(b.n, generator=self._audits) * s.audit_every < 1 for b in batches])
        wanted = audit | ~(margin > s.delta)
        if candidates is not None:
            wanted = wanted | candidates(pred, margin, wanted)
        exact, spread = torch.full_like(pred, -2), torch.zeros(len(pred))  # fp32 decisions (-2: none yet)
        rows = wanted.nonzero().flatten()
        if len(rows):  # fp32 decisions of `rows` and the deviation spread of its audited ones, in one transfer
            logits, z, a = torch.cat([b.logits for b in batches]), fp32(rows), audit[rows].nonzero().flatten()
            found = torch.zeros(len(rows), device=z.device)
            if len(a):
                a_dev = to_device(a, z.device)
                found[a_dev] = self._measure(logits[to_device(rows[a], logits.device)], z[a_dev])
            exact[rows], spread[rows] = Fetch([self._decide(z), found]).wait()
        recheck, start = torch.zeros_like(audit), 0
        for b in batches:  # in order: an audit's raised delta holds for its own batch and the later ones
            a = audit[start:start + b.n].nonzero().flatten() + start
            self._audit(len(a), spread[a])
            pred[a], margin[a] = exact[a], float("inf")
            idx = (~(margin[start:start + b.n] > s.delta)).nonzero().flatten() + start
            s.rechecked += len(idx)
            recheck[idx], margin[idx] = True, float("inf")
            start += b.n
        late = (recheck & (exact == -2)).nonzero().flatten()  # rechecks that a raised delta added
        if len(late):
            exact[late] = Fetch([self._decide(fp32(late))]).wait()[0]
        pred[recheck] = exact[recheck]
        return Decisions(pred, margin), exact

    def _audit(self, count: int, spread: torch.Tensor) -> None:
        s = self.stats
        s.audited += count
        if not len(spread) or float(spread.max()) <= s.delta:
            return
        worst = float(spread.max())
        if not s.breaches:
            self._warn(f"bf16-verified: an audit measured a logit deviation spread of {worst:.3g}, above delta "
                       f"{s.delta:.3g}; delta rises to {s.safety:g} x {worst:.3g}, and every earlier composite "
                       "whose margin it reaches is recomputed in fp32")
        s.breaches += int((spread > s.delta).sum())
        s.delta = s.safety * worst
        if self.on_raise is not None:
            self.on_raise(s.delta)


# -- near ties ----------------------------------------------------------------------------------
@dataclass
class NearTies:
    """One foreground's near ties (background indices and their bf16 margins) and floor."""

    bg: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    margin: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.float32))
    floor: float = math.inf

    def lowest(self) -> float:
        """The smallest margin it keeps or has folded into its floor (inf: nothing to re-examine)."""
        return min(self.floor, float(self.margin.min())) if len(self.margin) else self.floor

    def needs_search(self, delta: float) -> bool:
        """True when a margin that was not kept may be at or below `delta`."""
        return self.floor <= delta

    def at_most(self, delta: float) -> torch.Tensor:
        """The kept backgrounds whose margin `delta` reaches, smallest margin first."""
        sel = self.margin <= delta
        return self.bg[sel][torch.argsort(self.margin[sel], stable=True)]

    def settled(self, delta: float) -> "NearTies":
        """Without the near ties at or below `delta` (recomputed in fp32, hence exact now)."""
        keep = self.margin > delta
        return NearTies(self.bg[keep], self.margin[keep], self.floor)

    def capped(self, cap: int = CAP) -> "NearTies":
        if len(self.margin) <= cap:
            return self
        order = torch.argsort(self.margin, stable=True)
        floor = min(self.floor, float(self.margin[order[cap]]))
        return NearTies(self.bg[order[:cap]], self.margin[order[:cap]], floor)

    def to_json(self) -> str:
        return json.dumps({"bg": self.bg.tolist(), "margin": self.margin.tolist(),
                           "floor": None if math.isinf(self.floor) else self.floor})

    @classmethod
    def from_json(cls, text: str) -> "NearTies":
        d = json.loads(text)
        return cls(torch.tensor(d["bg"], dtype=torch.long), torch.tensor(d["margin"], dtype=torch.float32),
                   math.inf if d["floor"] is None else float(d["floor"]))


class NearTieLog:
    """The near ties of every foreground of one search, gathered a batch at a time.

    A batch adds its kept composites with a few tensor operations, whatever the number of
    foregrounds in it; a foreground's own `NearTies` are taken out when its verdict is given.
    """

    def __init__(self, num_fg: int):
        self.floor = torch.full((num_fg,), math.inf)
        self._kept: List[tuple] = []  # (foreground, background, margin) tensors of the kept composites

    def add(self, fg: torch.Tensor, bg: torch.Tensor, margin: torch.Tensor, keep_below: float) -> None:
        """Composites (foreground, background) decided with `margin` (inf where fp32 decided)."""
        decided_in_bf16 = torch.isfinite(margin)
        keep = decided_in_bf16 & (margin <= keep_below)
        rest = decided_in_bf16 & ~keep
        self.floor.scatter_reduce_(0, fg[rest], margin[rest].float(), reduce="amin")
        if bool(keep.any()):
            self._kept.append((fg[keep], bg[keep], margin[keep].float()))

    def take(self, i: int) -> NearTies:
        """Foreground `i`'s near ties, removed from the log."""
        if not self._kept:
            return NearTies(floor=float(self.floor[i]))
        fg, bg, margin = (torch.cat(t) for t in zip(*self._kept))
        mine = fg == i
        self._kept = [(fg[~mine], bg[~mine], margin[~mine])]
        return NearTies(bg[mine], margin[mine], float(self.floor[i])).capped()


# -- the engine's hooks ---------------------------------------------------------------------------
class Verifier:
    """bf16-verified inside one `ChallengeEngine`: the hooks its calls and their searches use.

    Args:
        engine: the engine it serves (its model, backgrounds, batch size, forwards and their timing).
        safety: the factor on the largest measured spread of logit deviations (delta).
        seed: of the calibration draw and the audits (pairs evaluated depend on it, verdicts never).
    """

    def __init__(self, engine: Any, safety: float = DEFAULT_SAFETY, seed: int = 0):
        self.engine, self.seed = engine, seed
        self.predictor = VerifiedPredictor(engine.model, engine.mapping, engine.device.type, safety=safety, seed=seed)
        self._side = torch.cuda.Stream(engine.device) if engine.device.type == "cuda" else None

    def fp32_stream(self) -> contextlib.AbstractContextManager:
        """Where the fp32 work (audits, rechecks, confirmations) runs: on CUDA a stream of its own,
        so that waiting for its few rows does not wait for the next bf16 batch the search has
        already queued. Its inputs are ready (the host has waited for the batch they come from) and
        it is waited for before they are freed, so the streams need no other ordering."""
        return torch.cuda.stream(self._side) if self._side is not None else contextlib.nullcontext()

    @property
    def stats(self) -> VerifiedStats:
        return self.predictor.stats

    def calibrate(self, images: torch.Tensor, masks: torch.Tensor, indices: Sequence[int]) -> None:
        """Measure delta on `DEFAULT_CALIBRATION` composites drawn at random (seeded) from the foregrounds
        `indices` and every background, unless delta is known already (an earlier call, or the
        stored progress of the run this engine resumes): later composites are audited."""
        if self.predictor.calibrated or not len(indices):
            return
        e = self.engine
        g = torch.Generator().manual_seed(self.seed + 1)
        pool = torch.as_tensor(list(indices), dtype=torch.long)
        fi, bi = (pool[torch.randint(len(pool), (DEFAULT_CALIBRATION,), generator=g)],
                  torch.randint(e.num_bg, (DEFAULT_CALIBRATION,), generator=g))  # drawn in this order
        e.forwards(images, masks, fi, bi, self.predictor.calibrate)

    def exact(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor, bi: torch.Tensor) -> torch.Tensor:
        """fp32 predictions (CPU) of the composites (foreground fi[k], background bi[k]), in batches."""
        return Fetch([self.predictor._decide(self.exact_logits(images, masks, fi, bi))]).wait()[0]

    def exact_logits(self, images: torch.Tensor, masks: torch.Tensor, fi: torch.Tensor,
                     bi: torch.Tensor) -> torch.Tensor:
        """fp32 logits (on the device) of the composites (foreground fi[k], background bi[k]), in
        full batches: what rechecks, audits and confirmations share."""
        out = self.engine.forwards(images, masks, fi, bi, lambda x: self.predictor._forward(x, bf16=False))
        return torch.cat(out) if out else torch.zeros(0, 1, device=self.engine.device)

    def checks(self, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int]) -> "SearchChecks":
        """The checks of one search (or one full row) over these foregrounds."""
        return SearchChecks(self, images, masks, labels)

    def reexamine(self, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int], results: List[FgResult],
                  on_result: OnResult = None) -> List[FgResult]:
        """Results whose kept margins the current delta reaches, made sound again.

        Their near ties at or below delta are recomputed in fp32 (a wrong one fools a survivor, and
        fixes its entry in a full row); one whose floor delta reaches is searched again. Searching
        may raise delta again, so this repeats until no result is stale. Each re-examined result is
        reported to `on_result`; returns the final results, in the order given.
        """
        images, masks = images.to(self.engine.device), masks.to(self.engine.device)
        final, stats = {r.index: r for r in results}, self.stats
        while True:  # a round over the results whose kept margins delta reaches
            delta = self.stats.delta
            stale = [r for r in final.values() if r.near is not None and r.near.lowest() <= delta]
            if not stale:
                return [final[r.index] for r in results]
            again = [r for r in stale if r.near.needs_search(delta)]
            out = self._recheck_near_ties(images, masks, labels, [r for r in stale if not r.near.needs_search(delta)])
            if again:
                stats.researched += len(again)
                if again[0].row is not None:
                    out += [launch_row(self.engine, images, masks, labels, r.index)() for r in again]
                else:
                    out += VerdictSearch(self.engine, images, masks, labels).run([r.index for r in again])
            stats.changed += sum(r.fooled and not final[r.index].fooled for r in out)
            for r in out:
                final[r.index] = r
                if on_result is not None:
                    on_result(r)

    def _recheck_near_ties(self, images, masks, labels: Sequence[int], results: List[FgResult]) -> List[FgResult]:
        """Each result's near ties at or below delta recomputed in fp32 and applied (see `_apply`)."""
        if not results:
            return []
        delta = self.stats.delta
        bgs = [r.near.at_most(delta) for r in results]
        fi = torch.repeat_interleave(torch.tensor([r.index for r in results]), torch.tensor([len(b) for b in bgs]))
        exact = self.exact(images, masks, fi, torch.cat(bgs))
        self.stats.reexamined += len(fi)
        return [_apply(r, b, pred, int(labels[r.index]), delta)
                for r, b, pred in zip(results, bgs, exact.split([len(b) for b in bgs]))]


class SearchChecks:
    """bf16-verified's part of one search (`search.VerdictSearch`) or one full row (`search.launch_row`).

    `launch` and `finish` predict the composites in bf16, recompute in fp32 the first fooling composite of each
    foreground before any verdict is given (a composite that fp32 finds not fooling is taken as fp32
    decided it, and the search goes on: fooled verdicts are exact), and keep the near ties; `given`
    hands each verdict its near ties.
    """

    def __init__(self, verifier: Verifier, images: torch.Tensor, masks: torch.Tensor, labels: Sequence[int]):
        self.verifier, self.images, self.masks = verifier, images, masks
        self.labels = torch.as_tensor(np.asarray(labels), dtype=torch.long)
        self.log = NearTieLog(len(images))

    def launch(self, fi: torch.Tensor, bi: torch.Tensor) -> "_Launched":
        """Queue the bf16 forwards of the composites (fi[k], bi[k]); nothing waits on the device (the
        search counts them as pairs when it keeps them)."""
        v = self.verifier
        return _Launched(fi, bi, v.engine.forwards(self.images, self.masks, fi, bi, v.predictor.launch))

    def finish(self, launched: "_Launched") -> torch.Tensor:
        """Predictions (CPU) of launched composites: audits and rechecks, then the first fooling
        composite of each foreground confirmed in fp32 (`_confirm_fooling`), in as few fp32
        forwards as they allow, and the near ties kept."""
        v = self.verifier
        fi, bi = launched.fi, launched.bi
        fp32 = lambda rows: v.exact_logits(self.images, self.masks, fi[rows], bi[rows])  # noqa: E731

        def likely(pred, margin, decided):
            """Each foreground's first row that bf16 finds fooling and nothing else decides: what
            `_confirm_fooling` most likely recomputes, computed in the same forward."""
            first = first_per_segment((pred != self.labels[fi]) & ~decided, fi, len(self.images))
            return torch.zeros(len(pred), dtype=torch.bool).index_fill_(0, first[first >= 0], True)

        with v.fp32_stream():
            (pred, margin), exact = v.predictor.finish(launched.batches, fp32, likely)
            self._confirm_fooling(fi, bi, pred, margin, exact)
        self.log.add(fi, bi, margin, KEEP * v.stats.delta)
        return pred

    def _confirm_fooling(self, fi: torch.Tensor, bi: torch.Tensor, pred: torch.Tensor, margin: torch.Tensor,
                         known: torch.Tensor) -> None:
        """Make the first wrong prediction of each foreground an fp32 one.

        Rows decided in bf16 (finite margin) are recomputed in fp32, in place; where fp32 is right the
        next wrong row of that foreground is confirmed in turn. `known`: fp32 predictions already
        computed (-2 where none was); the rest cost one fp32 forward per round, for all foregrounds
        together, and rarely more than one round.
        """
        labels, stats = self.labels[fi], self.verifier.stats
        while True:
            wrong = pred != labels
            if not bool(wrong.any()):  # nothing to confirm: the usual batch of a robust stretch
                return
            first = first_per_segment(wrong, fi, len(self.images))
            k = first[first >= 0].sort().values  # in row order
            k = k[torch.isfinite(margin[k])]
            if not len(k):
                return
            exact = known[k].clone()
            todo = (exact == -2).nonzero().flatten()
            if len(todo):
                exact[todo] = self.verifier.exact(self.images, self.masks, fi[k[todo]], bi[k[todo]])
            stats.confirmed += len(k)
            stats.overturned += int((exact == labels[k]).sum())
            pred[k] = exact
            margin[k] = math.inf

    def given(self, r: FgResult) -> FgResult:
        """`r` with the near ties its verdict rests on: a survivor's, or a full row's (whose later
        entries are bf16 decisions still); a fooled verdict of the search is exact and keeps none."""
        near = self.log.take(r.index)  # taken out of the log in any case
        return r if r.fooled and r.row is None else dataclasses.replace(r, near=near)


#: composites whose bf16 forwards are queued (`SearchChecks.launch`)
_Launched = NamedTuple("_Launched", [("fi", torch.Tensor), ("bi", torch.Tensor), ("batches", List[Bf16Batch])])


def _apply(r: FgResult, bg: torch.Tensor, pred: torch.Tensor, label: int, delta: float) -> FgResult:
    """`r` once its composites with backgrounds `bg` are known in fp32 (`pred`): a full row takes
    them as its entries; a wrong one fools a survivor. A fooled verdict is exact and stays."""
    row = None
    if r.row is not None:
        row = r.row.copy()
        row[bg.numpy()] = row_of(pred)
    near = r.near.settled(delta)
    wrong = (pred != label).nonzero()
    if r.fooled or not len(wrong):
        return dataclasses.replace(r, near=near, row=row)
    k = int(wrong[0])
    return FgResult(r.index, True, r.pairs, int(bg[k]), int(pred[k]), near=near if row is not None else None, row=row)


# -- the runner's hooks ---------------------------------------------------------------------------
class VerifiedRun:
    """bf16-verified's share of one invocation of a run (`runner._Invocation`): what it stores and
    restores, and one delta for all ranks.

    A killed run resumes with its delta and audit counts: the counts are stored with the verdicts
    at every chunk boundary, and a delta an audit raises at once (`Store.raise_challenge_delta`), so
    that survivors stored before it are re-examined when the run resumes.
    """

    def __init__(self, job: Any):
        self.job, self.verifier = job, job.engine.verifier
        # an earlier invocation's delta and audit counts still count (a killed one may have stored
        # only the delta an audit raised)
        saved, st = job.store.challenge_state(job.run_id) or {}, self.verifier.stats
        if saved.get("delta") is not None:
            self.verifier.predictor.raise_to(saved["delta"])
        st.max_deviation, st.max_spread = saved.get("max_deviation", 0.0), saved.get("max_spread", 0.0)
        if job.rank == 0:  # counts are summed over ranks: one rank carries the earlier ones
            vars(st).update({k: int(saved.get(k, 0)) for k in _SUMMED})
        self.verifier.predictor.on_raise = lambda delta: job.store.raise_challenge_delta(job.run_id, delta)

    @staticmethod
    def near_row(image_id: str, r: FgResult) -> tuple:
        """A verdict's near-tie row (none kept for a fooled verdict), stored with it."""
        near = r.near if r.near is not None else NearTies()
        lowest = near.lowest()
        return image_id, None if math.isinf(lowest) else lowest, near.to_json()

    def settle(self) -> None:
        """Agree on the largest delta of every rank, re-examine the stored survivors of this rank
        whose kept margins it reaches, repeat while that raised delta anywhere; then store the
        run's audit counts (rank 0). A collective: every rank calls it at every chunk boundary."""
        job, v = self.job, self.verifier
        while True:
            agreed = self.totals()["delta"]
            if agreed is None:
                return
            v.predictor.raise_to(agreed)
            self._reexamine_stored()
            if not distributed.all_reduce([float(v.stats.delta > agreed)], job.ranks, "max")[0]:  # no rank raised it
                break
        state = self.totals()
        if job.rank == 0:
            job.state = state
        job.flush()

    def _reexamine_stored(self) -> None:
        job, v, d = self.job, self.verifier, self.job.data
        stale = [r for r in job.store.challenge_near_ties(job.run_id, v.stats.delta)
                 if d.position[r["image_id"]] in job.mine]
        if not stale:
            return
        verdicts = {r["image_id"]: r for r in job.store.challenge_results(job.run_id)}
        stale = [r for r in stale if r["image_id"] in verdicts]
        positions = [d.position[r["image_id"]] for r in stale]
        images, masks = job.load(positions)
        matrix = job.store.challenge_matrix(job.run_id, [d.fg_ids[p] for p in positions]) if job.cfg.full else None
        rows = [verdicts[r["image_id"]] for r in stale]
        job.clean.update((pos, int(row["clean_pred"])) for pos, row in zip(positions, rows))
        results = [FgResult(j, bool(row["fooled"]), int(row["pairs"]), d.bg_index.get(row["fooling_bg"], -1),
                            row["fooling_pred"] if row["fooled"] else -2, near=NearTies.from_json(near["near"]),
                            row=None if matrix is None else np.array(matrix[j]))
                   for j, (near, row) in enumerate(zip(stale, rows))]
        v.reexamine(images, masks, d.fg_labels[positions], results,
                    on_result=lambda r: job.record(positions[r.index], r))
        job.flush()

    def totals(self) -> dict:
        """The counts summed over ranks, the largest deviations and delta (None before any
        calibration). A collective: every rank calls it at the same points."""
        st = asdict(self.verifier.stats)
        if st["delta"] != st["delta"]:  # NaN: this rank has not calibrated (it had nothing to do)
            st["delta"] = -1.0
        ranks = self.job.ranks
        st.update({k: int(v) for k, v in zip(_SUMMED, distributed.all_reduce([st[k] for k in _SUMMED], ranks))})
        st.update(zip(_LARGEST, distributed.all_reduce([st[k] for k in _LARGEST], ranks, "max")))
        if st["delta"] < 0:
            st["delta"] = None
        return st


# -- the report's lines -----------------------------------------------------------------------------
def report_rows(v: dict) -> List[tuple]:
    """The run's `bf16_*` metric rows (name, variant, value, lo, hi, n) from its totals."""
    return [("bf16_audited", "", v["audited"], None, None, v["composites"]),
            ("bf16_calibration", "", v["calibration"], None, None, None),
            ("bf16_max_spread", "", v["max_spread"], None, None, v["calibration"] + v["audited"]),
            ("bf16_delta", "", v["delta"], None, None, None),
            ("bf16_safety", "", v["safety"], None, None, None),
            ("bf16_breaches", "", v["breaches"], None, None, v["audited"]),
            ("bf16_rechecked", "", v["rechecked"], None, None, v["composites"]),
            ("bf16_confirmed", "", v["confirmed"], None, None, None),
            ("bf16_overturned", "", v["overturned"], None, None, v["confirmed"]),
            ("bf16_reexamined", "", v["reexamined"], None, None, None),
            ("bf16_researched", "", v["researched"], None, None, None),
            ("bf16_changed", "", v["changed"], None, None, None)]


def report_lines(v: dict) -> List[str]:
    """What the run's text says it checked: fooled verdicts exact, survivors as good as the audits."""
    p = {**v, "delta": float("nan") if v["delta"] is None else v["delta"]}  # None: nothing was decided in bf16
    lines = [f"bf16-verified: fooled verdicts are exact ({p['confirmed']} fooling composites confirmed in fp32, "
             f"{p['overturned']} overturned); a survivor's verdict is as good as the audits: "
             f"{p['audited']} composites audited at random (1 in {p['audit_every']}) and {p['calibration']} "
             f"calibration composites, largest deviation spread {p['max_spread']:.3g}, delta {p['delta']:.3g} "
             f"(safety {p['safety']:g}); {p['rechecked']} of {p['composites']} composites rechecked in fp32 "
             "(margin <= delta)"]
    if p["breaches"]:
        lines.append(f"bf16-verified: {p['breaches']} audits exceeded delta, which rose; {p['reexamined']} kept "
                     f"composites recomputed in fp32 and {p['researched']} foregrounds searched again, "
                     f"{p['changed']} survivors turned fooled")
    return lines
