"""The noise schedule of ImageNet-E's sampler: guided-diffusion's, as its gaussian_diffusion.py and
respace.py define it, in float64.

1,000 linear betas (1e-4 to 0.02), respaced to `respacing` steps ("100": the toolkit's default;
"a,b,c": a, b and c steps from equal thirds), the respaced betas re-derived from the kept
cumulative alphas so that q(x_t | x_0) stays the original's at every kept step. Step indices here
are the respaced ones (0 .. steps-1); the network is called at `timestep_map[i]`, the original
timestep (rescale_timesteps with 1,000 steps is a factor of 1).

diffusers' DDPMScheduler computes the same quantities in float32 and takes log(1e-20) as the
posterior log-variance at the last step, where guided-diffusion clips it to the next step's; the
guided mean needs the variance at every step, so bgbench keeps guided-diffusion's own arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from ..errors import BgbenchError

TRAINED_STEPS = 1000


def space_timesteps(n: int, respacing: str) -> List[int]:
    """The kept timesteps of an `n`-step process: per equal section, a count spread evenly over it
    (respace.py's `space_timesteps`, without its 'ddimN' form)."""
    try:
        counts = [int(c) for c in str(respacing).split(",")]
    except ValueError:
        raise BgbenchError(f"--respacing {respacing!r}: give a step count (e.g. 100) or counts per section "
                           f"(e.g. 10,20,30)") from None
    size_per, extra = divmod(n, len(counts))
    start, kept = 0, []
    for i, count in enumerate(counts):
        size = size_per + (1 if i < extra else 0)
        if not 1 <= count <= size:
            raise BgbenchError(f"--respacing {respacing}: {count} steps do not fit in a section of {size}")
        stride = 1 if count <= 1 else (size - 1) / (count - 1)
        cur = 0.0
        for _ in range(count):
            kept.append(start + round(cur))
            cur += stride
        start += size
    return sorted(set(kept))


@dataclass
class Schedule:
    respacing: str = "100"
    timestep_map: List[int] = field(init=False)

    def __post_init__(self):
        base = np.cumprod(1.0 - np.linspace(0.0001, 0.02, TRAINED_STEPS, dtype=np.float64))  # linear betas
        self.timestep_map = space_timesteps(TRAINED_STEPS, self.respacing)
        kept = base[self.timestep_map]
        betas = 1.0 - kept / np.append(1.0, kept[:-1])
        self.betas = betas
        ac = np.cumprod(1.0 - betas)
        prev = np.append(1.0, ac[:-1])
        self.sqrt_ac, self.sqrt_1m_ac = np.sqrt(ac), np.sqrt(1.0 - ac)
        self.sqrt_recip_ac, self.sqrt_recipm1_ac = np.sqrt(1.0 / ac), np.sqrt(1.0 / ac - 1.0)
        self.posterior_variance = betas * (1.0 - prev) / (1.0 - ac)
        # the posterior variance is 0 at the first step: its log is clipped to the next one's
        self.posterior_log_variance = np.log(np.append(self.posterior_variance[1:2], self.posterior_variance[1:]))
        self.posterior_coef1 = betas * np.sqrt(prev) / (1.0 - ac)
        self.posterior_coef2 = (1.0 - prev) * np.sqrt(1.0 - betas) / (1.0 - ac)
        self.log_betas = np.log(betas)

    @property
    def steps(self) -> int:
        return len(self.betas)

    def indices(self, skip: int) -> List[int]:
        """The steps sampled after skipping the first `skip` (the toolkit's skip_timesteps), last first."""
        if not 0 <= skip < self.steps:
            raise BgbenchError(f"--skip {skip}: must be at least 0 and below the {self.steps} respaced steps")
        return list(range(self.steps - skip))[::-1]

    @staticmethod
    def _at(arr: np.ndarray, i: int, like):
        import torch
        return torch.as_tensor(arr[i], dtype=like.dtype, device=like.device)

    def guidance_index(self, i: int) -> int:
        """The step at which the toolkit's `cond_fn` predicts x0 again: its `unscale_timestep` of
        the original timestep in float32, floor(timestep_map[i] * steps / 1000). It is `i` itself
        for a single-section respacing; computed as the toolkit does, it stays exact elsewhere."""
        return int(np.floor(np.float32(self.timestep_map[i]) * np.float32(self.steps / TRAINED_STEPS)))

    def q_sample(self, x0, i: int, noise):
        return self._at(self.sqrt_ac, i, x0) * x0 + self._at(self.sqrt_1m_ac, i, x0) * noise

    def predict_x0(self, x_t, i: int, eps):
        return self._at(self.sqrt_recip_ac, i, x_t) * x_t - self._at(self.sqrt_recipm1_ac, i, x_t) * eps

    def posterior_mean(self, x0, x_t, i: int):
        return self._at(self.posterior_coef1, i, x_t) * x0 + self._at(self.posterior_coef2, i, x_t) * x_t

    def learned_log_variance(self, i: int, values):
        """Learned-range variance: `values` in [-1, 1] between the clipped posterior log-variance
        and log beta."""
        frac = (values + 1) / 2
        return frac * self._at(self.log_betas, i, values) + (1 - frac) * self._at(self.posterior_log_variance, i,
                                                                                   values)
