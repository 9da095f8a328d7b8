"""`bf16-verified`: predictions computed in bf16 that equal the fp32 predictions.

Why a margin check is enough. For one input, let d = bf16 logits - fp32 logits (a vector over the
classes) and let eps bound its spread, max(d) - min(d). Let the bf16 logits decide class t. The
*decision margin* m is how far the bf16 logits are from deciding anything else:
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

eps is not known a priori, so it is measured: the first `calibration_batches` batches are run in
both precisions (their predictions come from fp32) and eps_cal is the largest spread seen. Every
later input whose bf16 margin is at most

    delta = safety * eps_cal

is recomputed in fp32 (`rechecked`), and so is any input with a non-finite margin. The safety
factor is recorded with the run. Every `audit_every`-th batch is also run in fp32 in full: if an
audit ever sees a spread above delta, the guarantee may have failed for earlier batches, so the
run says so (`exceeded`) and delta grows to safety times the new spread.

On a CPU, bf16 autocast is only faster where the CPU has bf16 matrix units (AMX, AVX512-BF16); it
is the path to speed on GPUs. Nothing here is exact until the verdicts have been compared with fp32
on the hardware in question: the tests do that on CPU.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from ...classes import Mapping, imagenet_to_in9
from ...models.spec import IMAGENET1K, BgModel
from .config import DEFAULT_SAFETY  # noqa: F401 (re-exported)
from ..predict import decide

DEFAULT_CALIBRATION_BATCHES = 2
DEFAULT_AUDIT_EVERY = 64


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


@dataclass
class VerifiedStats:
    """What a bf16-verified run did; recorded with the run."""

    safety: float
    composites: int = 0  # inputs predicted (calibration and audits included)
    rechecked: int = 0  # inputs whose bf16 margin was <= delta, recomputed in fp32
    calibration: int = 0  # inputs run in both precisions to measure eps
    audited: int = 0  # inputs run in both precisions by audits
    max_deviation: float = 0.0  # largest |bf16 - fp32| logit deviation measured (calibration and audits)
    max_spread: float = 0.0  # largest spread of the deviations within one input (calibration and audits)
    calibration_deviation: float = 0.0  # eps_cal: the largest spread seen while calibrating
    delta: float = float("nan")  # margin threshold in use at the end
    exceeded: bool = False  # an audit saw a spread above delta

    def as_dict(self) -> dict:
        return asdict(self)


class VerifiedPredictor:
    """Predict with bf16 autocast, recomputing near-ties in fp32 (see the module docstring)."""

    def __init__(self, model: BgModel, mapping: Mapping | str = Mapping.ARGMAX, device_type: str = "cpu",
                 safety: float = DEFAULT_SAFETY, calibration_batches: int = DEFAULT_CALIBRATION_BATCHES,
                 audit_every: int = DEFAULT_AUDIT_EVERY, warn: Callable[[str], None] | None = None):
        if safety < 1:
            raise ValueError("safety must be >= 1")
        self.model = model
        self.mapping = mapping
        self.device_type = device_type
        self.calibration_batches = max(1, int(calibration_batches))
        self.audit_every = int(audit_every)
        self.stats = VerifiedStats(safety=float(safety))
        self._batches = 0
        self._warn = warn or (lambda msg: print(msg, file=sys.stderr))

    def _bf16(self):
        return torch.autocast(device_type=self.device_type, dtype=torch.bfloat16)

    def _forward(self, x: torch.Tensor, bf16: bool) -> torch.Tensor:
        with torch.inference_mode(), (self._bf16() if bf16 else contextlib.nullcontext()):
            return self.model(x).float()

    def _decide(self, logits: torch.Tensor) -> torch.Tensor:
        return decide(self.model, logits, self.mapping)[0]

    def _both(self, x: torch.Tensor) -> tuple:
        """fp32 predictions, and the largest spread of bf16 - fp32 deviations within one input."""
        exact = self._forward(x, bf16=False)
        if not len(x):
            return self._decide(exact), 0.0
        d = self._forward(x, bf16=True) - exact
        spread = float((d.max(dim=1).values - d.min(dim=1).values).max())
        self.stats.max_deviation = max(self.stats.max_deviation, float(d.abs().max()))
        self.stats.max_spread = max(self.stats.max_spread, spread)
        return self._decide(exact), spread

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions (dataset label space; -1 for unmapped) equal to fp32's, for a float NCHW batch."""
        s = self.stats
        self._batches += 1
        s.composites += len(x)
        if self._batches <= self.calibration_batches:
            pred, dev = self._both(x)
            s.calibration += len(x)
            s.calibration_deviation = max(s.calibration_deviation, dev)
            s.delta = s.safety * s.calibration_deviation
            return pred
        if self.audit_every > 0 and self._batches % self.audit_every == 0:
            pred, dev = self._both(x)
            s.audited += len(x)
            if not dev <= s.delta:
                if not s.exceeded:
                    self._warn(f"bf16-verified: an audit measured a logit deviation spread of {dev:.3g}, above "
                               f"the margin threshold {s.delta:.3g} (safety {s.safety:g} x calibration "
                               f"{s.calibration_deviation:.3g}); earlier verdicts are not proven equal to fp32. "
                               "Raising the threshold.")
                s.exceeded = True
                s.delta = max(s.delta, s.safety * dev)
            return pred
        logits = self._forward(x, bf16=True)
        pred = self._decide(logits)
        margin = decision_margin(logits, self.model.spec.label_space, self.mapping)
        need = ~(margin > s.delta)  # also catches NaN margins
        if bool(need.any()):
            idx = need.nonzero().flatten()
            pred[idx] = self._decide(self._forward(x[idx], bf16=False))
            s.rechecked += len(idx)
        return pred
