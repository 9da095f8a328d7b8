"""`bf16-verified`: composites predicted in bf16, with every fp32 decision the run can prove kept.

What is exact and what is audited:
- **Fooled verdicts are exact.** The engine recomputes in fp32 the composite that fools before it
  gives the verdict; if fp32 disagrees, the search goes on.
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
that the engine draws at random (seeded) across the run's foregrounds and every background, not
on the run's first batches: each is run in both precisions and delta = safety x the largest spread.
Then every composite whose bf16 margin is at most delta is recomputed in fp32 (`rechecked`), and
so is any with a non-finite margin. Every composite is also *audited* with probability
1/`audit_every`, drawn from a seeded generator: run in fp32 as well, its decision taken from fp32
and its spread measured. An audit whose spread exceeds delta is a *breach*: delta rises to safety x
that spread, and the engine re-examines every earlier composite whose kept margin the new delta
reaches (`neartie`). The safety factor, the counts and the largest spread are recorded.

fp32 means fp32: every fp32 forward (the fp32 precision, rechecks, audits, confirmations) runs
under `strict_fp32`, which turns TF32 and bf16-reduced fp32 matmul and convolution off and then
restores the user's settings.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import asdict, dataclass
from typing import Callable, Dict, Iterator, Optional

import torch

from ... import console
from ...classes import Mapping, imagenet_to_in9
from ...models.spec import IMAGENET1K, BgModel
from .config import DEFAULT_SAFETY  # noqa: F401 (re-exported)
from ...evaluation.predict import decide

#: composites run in both precisions before the first bf16 decision
DEFAULT_CALIBRATION = 256
#: one composite in this many, drawn at random, is audited in fp32
DEFAULT_AUDIT_EVERY = 64

#: the per-backend fp32 precision settings of PyTorch's newer API (`torch.backends.<path>.fp32_precision`)
_FP32_KNOBS = ("cuda.matmul", "cudnn.conv", "cudnn.rnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn")


def _knob(path: str):
    obj = torch.backends
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj if obj is not None and hasattr(obj, "fp32_precision") else None


@functools.lru_cache(maxsize=None)
def _knobs() -> Dict[str, object]:
    """The backends of `_FP32_KNOBS` this PyTorch has (none before its per-backend API); looked up
    once, since looking them up costs more than setting them."""
    return {path: _knob(path) for path in _FP32_KNOBS if _knob(path) is not None}


def fp32_settings() -> Dict[str, object]:
    """The user's settings that decide whether an fp32 matmul or convolution really is fp32.

    With PyTorch's per-backend API: each backend's `fp32_precision` ('ieee' is fp32; 'tf32' and
    'bf16' are not; 'none' defers to the backend). Otherwise the legacy flags.
    """
    knobs = _knobs()
    if knobs:
        return {path: knob.fp32_precision for path, knob in knobs.items()}
    return {"cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


@contextlib.contextmanager
def strict_fp32() -> Iterator[None]:
    """fp32 forwards in true fp32: TF32 (cuBLAS, cuDNN) and oneDNN's reduced fp32 off, then the
    user's settings restored. PyTorch's default lets cuDNN convolutions use TF32 on Ampere and
    later GPUs, so without this an fp32 run on CUDA is not fp32."""
    knobs = _knobs()
    saved = fp32_settings()
    try:
        if knobs:  # the legacy flags must not be mixed with this API: PyTorch refuses to read them then
            for knob in knobs.values():
                knob.fp32_precision = "ieee"
        else:
            torch.set_float32_matmul_precision("highest")
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        yield
    finally:
        if knobs:
            for path, knob in knobs.items():
                knob.fp32_precision = saved[path]
        else:
            torch.set_float32_matmul_precision(saved["float32_matmul_precision"])
            torch.backends.cuda.matmul.allow_tf32 = saved["cuda.matmul.allow_tf32"]
            torch.backends.cudnn.allow_tf32 = saved["cudnn.allow_tf32"]


def decision_margin(logits: torch.Tensor, label_space: str, mapping: Mapping | str = Mapping.ARGMAX) -> torch.Tensor:
    """Per row: how far the logits are from a different decision (see the module docstring).

    logits: (N, C) float. Returns (N,) float; inf when no rival decision exists.
    """
    logits = logits.float()
    if label_space != IMAGENET1K:
        if logits.shape[1] < 2:
            return torch.full((logits.shape[0],), float("inf"), device=logits.device)
        top2 = logits.topk(2, dim=1).values
        return top2[:, 0] - top2[:, 1]
    table = torch.as_tensor(imagenet_to_in9(), device=logits.device)
    if Mapping(mapping) is Mapping.ARGMAX:
        top, arg = logits.max(dim=1)
        rival = table[None, :] != table[arg][:, None]  # classes that decide something else
        runner = logits.masked_fill(~rival, float("-inf")).max(dim=1).values
        return top - runner
    # superclass: log of each IN-9 class's summed (unnormalised) probability
    valid = table >= 0
    groups = torch.full((logits.shape[0], int(table.max()) + 1), float("-inf"), device=logits.device)
    for c in range(groups.shape[1]):
        groups[:, c] = torch.logsumexp(logits[:, valid & (table == c)], dim=1)
    top2 = groups.topk(2, dim=1).values
    return top2[:, 0] - top2[:, 1]


def bf16_slowdown(model: torch.nn.Module, x: torch.Tensor, repeats: int = 2) -> float:
    """Seconds of a bf16-autocast forward of `x` over an fp32 one (best of `repeats`, after one
    warm-up each): above 1, bf16 costs more than it saves on this device.

    Measured rather than guessed from CPU flags: this project's CI CPU reports AVX512-BF16, yet
    a challenge ran 184 s under bf16-verified against about 35 s in fp32. bf16 pays on hardware
    with bf16 matrix units that the kernels use (GPUs from Ampere on, CPUs with AMX)."""
    import time
    device_type = x.device.type

    def best(bf16: bool) -> float:
        times = []
        for i in range(repeats + 1):
            context = torch.autocast(device_type=device_type, dtype=torch.bfloat16) if bf16 else \
                contextlib.nullcontext()
            if device_type == "cuda":
                torch.cuda.synchronize(x.device)
            t0 = time.perf_counter()
            with torch.inference_mode(), context:
                model(x)
            if device_type == "cuda":
                torch.cuda.synchronize(x.device)
            if i:
                times.append(time.perf_counter() - t0)
        return min(times)
    return best(True) / max(best(False), 1e-9)


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

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Decisions:
    """Predictions of a batch, and the bf16 margin behind each (inf: decided in fp32)."""

    pred: torch.Tensor
    margin: torch.Tensor


class VerifiedPredictor:
    """Predict in bf16 autocast: near-ties recomputed in fp32, random audits (module docstring)."""

    def __init__(self, model: BgModel, mapping: Mapping | str = Mapping.ARGMAX, device_type: str = "cpu",
                 safety: float = DEFAULT_SAFETY, audit_every: int = DEFAULT_AUDIT_EVERY, seed: int = 0,
                 warn: Optional[Callable[[str], None]] = None, on_raise: Optional[Callable[[float], None]] = None):
        if safety < 1:
            raise ValueError("safety must be >= 1")
        if audit_every < 1:
            raise ValueError("audit_every must be >= 1")
        self.model = model
        self.mapping = mapping
        self.device_type = device_type
        self.stats = VerifiedStats(safety=float(safety), audit_every=int(audit_every))
        self._audits = torch.Generator().manual_seed(int(seed))
        self._warn = warn or console.status
        self.on_raise = on_raise  # told each new delta an audit sets (a runner stores it at once)

    @property
    def calibrated(self) -> bool:
        return self.stats.delta == self.stats.delta  # not NaN

    @property
    def delta(self) -> float:
        return self.stats.delta

    def _forward(self, x: torch.Tensor, bf16: bool) -> torch.Tensor:
        precision = (torch.autocast(device_type=self.device_type, dtype=torch.bfloat16) if bf16
                     else strict_fp32())
        with torch.inference_mode(), precision:
            return self.model(x).float()

    def _decide(self, logits: torch.Tensor) -> torch.Tensor:
        return decide(self.model, logits, self.mapping)[0]

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        """fp32 predictions (dataset label space; -1 for unmapped)."""
        return self._decide(self._forward(x, bf16=False))

    def _measure(self, fast: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
        """Per row, the spread of bf16 - fp32 deviations (rows with non-finite logits left out: they
        measure nothing, and are decided in fp32 anyway); updates the largest seen."""
        d = fast - exact
        d = d[torch.isfinite(d).all(dim=1)]
        spread = d.max(dim=1).values - d.min(dim=1).values
        if len(d):
            self.stats.max_deviation = max(self.stats.max_deviation, float(d.abs().max()))
            self.stats.max_spread = max(self.stats.max_spread, float(spread.max()))
        return spread

    def calibrate(self, x: torch.Tensor) -> None:
        """Run composites drawn across the run in both precisions; delta = safety x the largest spread."""
        spread = self._measure(self._forward(x, bf16=True), self._forward(x, bf16=False))
        s = self.stats
        s.calibration += len(x)
        top = float(spread.max()) if len(spread) else 0.0
        s.delta = max(s.delta if self.calibrated else 0.0, s.safety * top)

    def raise_to(self, delta: float) -> None:
        """Adopt a larger delta measured elsewhere (another rank, an earlier invocation of the run)."""
        if not self.calibrated or delta > self.stats.delta:
            self.stats.delta = float(delta)

    def __call__(self, x: torch.Tensor) -> Decisions:
        """Decisions for a float NCHW batch: bf16 where the margin exceeds delta, fp32 elsewhere."""
        if not self.calibrated:
            raise RuntimeError("calibrate the VerifiedPredictor before its first bf16 decision")
        s = self.stats
        s.composites += len(x)
        logits = self._forward(x, bf16=True)
        pred = self._decide(logits)
        margin = decision_margin(logits, self.model.spec.label_space, self.mapping)
        audit = (torch.rand(len(x), generator=self._audits) * s.audit_every < 1).to(x.device)
        if bool(audit.any()):
            idx = audit.nonzero().flatten()
            exact = self._forward(x[idx], bf16=False)
            self._audit(len(idx), self._measure(logits[idx], exact))
            pred[idx] = self._decide(exact)
            margin[idx] = float("inf")
        need = ~(margin > s.delta)  # at or below delta, or NaN
        if bool(need.any()):
            idx = need.nonzero().flatten()
            pred[idx] = self.exact(x[idx])
            margin[idx] = float("inf")
            s.rechecked += len(idx)
        return Decisions(pred, margin)

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
