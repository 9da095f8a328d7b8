"""`bf16-verified`: predictions computed in bf16 that equal the fp32 predictions.

Why a margin check is enough. Let eps bound |bf16 logit - fp32 logit| over every class of one
input, and let the bf16 logits decide class d. The *decision margin* m is how far the bf16 logits
are from deciding anything else:
- a model over the dataset's classes: top logit minus the runner-up;
- a 1000-class model with the paper's `argmax` mapping: top logit minus the largest logit of any
  class whose IN-9 label differs from the top class's label (ImageNet classes that map to the same
  IN-9 class, or that both map to none, give the same decision, so they are not rivals);
- the `superclass` mapping: log S_d - log S_r, where S_c is the summed probability of the IN-9
  class c and r the runner-up (the softmax normaliser cancels in the ratio, so each log-ratio moves
  by at most 2*eps).
In all three cases, if m > 2*eps then the fp32 logits decide d as well: every rival's fp32 score
is below the winner's (rival <= bf16 rival + eps < bf16 winner - eps <= fp32 winner).

eps is not known a priori, so it is measured: the first `calibration_batches` batches are run in
both precisions (their predictions come from fp32) and eps_cal is the largest absolute logit
deviation seen. Every later input whose bf16 margin is at most

    delta = 2 * safety * eps_cal

is recomputed in fp32 (`rechecked`), and so is any input with a non-finite margin. The safety
factor is recorded with the run. Every `audit_every`-th batch is also run in fp32 in full: if an
audit ever sees a deviation above safety * eps_cal, the guarantee may have failed for earlier
batches, so the run says so (`exceeded`) and delta grows to cover the new deviation.

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

from ..classes import Mapping, imagenet_to_in9
from ..models.spec import IMAGENET1K, BgModel
from .challenge_config import DEFAULT_SAFETY  # noqa: F401 (re-exported)
from .predict import decide

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
    calibration_deviation: float = 0.0  # eps_cal: the largest deviation seen while calibrating
    delta: float = float("nan")  # margin threshold in use at the end
    exceeded: bool = False  # an audit saw a deviation above safety * eps_cal

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
        exact = self._forward(x, bf16=False)
        dev = float((self._forward(x, bf16=True) - exact).abs().max()) if len(x) else 0.0
        self.stats.max_deviation = max(self.stats.max_deviation, dev)
        return self._decide(exact), dev

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions (dataset label space; -1 for unmapped) equal to fp32's, for a float NCHW batch."""
        s = self.stats
        self._batches += 1
        s.composites += len(x)
        if self._batches <= self.calibration_batches:
            pred, dev = self._both(x)
            s.calibration += len(x)
            s.calibration_deviation = max(s.calibration_deviation, dev)
            s.delta = 2 * s.safety * s.calibration_deviation
            return pred
        if self.audit_every > 0 and self._batches % self.audit_every == 0:
            pred, dev = self._both(x)
            s.audited += len(x)
            if dev > s.safety * s.calibration_deviation:
                if not s.exceeded:
                    self._warn(f"bf16-verified: an audit measured a logit deviation of {dev:.3g}, above "
                               f"safety x calibration ({s.safety:g} x {s.calibration_deviation:.3g}); earlier "
                               "verdicts are not proven equal to fp32. Raising the margin threshold.")
                s.exceeded = True
                s.delta = max(s.delta, 2 * s.safety * dev)
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
