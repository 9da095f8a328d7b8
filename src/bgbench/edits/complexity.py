"""Background complexity edits by gradient steps on the background pixels alone (torch, CPU).

Level lambda: minimise  -lambda * kappa * mean|FFT(x)|  +  1/2 * mean((x - x0)^2)
over the background pixels of x, starting from the image's own background x0 (seed 003's
amplitude-spectrum objective; the DC term is left out, since it only shifts brightness). lambda < 0
simplifies, lambda > 0 adds texture. The adversarial level instead ascends the classifier's
cross-entropy on the background pixels, within an L-infinity bound. The object's pixels stay
bit-identical.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..classes import IMAGENET1K, superclass_sums

STEPS = 100
STEP_SIZE = 0.1  # small plain steps: the |F| subgradient oscillates near zero amplitude with large ones
STRENGTH = 1 / 40  # kappa = STRENGTH * std(x0); calibrated on Synthetic-9 (benchmarks/README.md)
ADV_EPS = 16 / 255
ADV_STEPS = 10


def spectrum_edit(image: np.ndarray, mask: np.ndarray, lam: float, steps: int = STEPS,
                  step_size: float = STEP_SIZE, strength: float = STRENGTH) -> np.ndarray:
    """The image with its background pushed towards complexity level `lam` (HxWx3 uint8 in and out).

    Plain gradient descent on  L(x) = -lam * kappa * sum|FFT(x)| + 1/2 * sum (x - x0)^2  over the
    background pixels (kappa = strength * std(x0)). This is N times -lam * kappa * mean|FFT| +
    1/2 mean (x - x0)^2, DESIGN's objective; written as sums, the step size does not depend on the
    image size. Plain steps (not Adam) move each pixel in proportion to its gradient, so flat
    regions are not sprinkled with noise.
    """
    import torch
    x0 = torch.from_numpy(np.array(image, copy=True)).permute(2, 0, 1).float().div(255)
    bg = torch.from_numpy(~mask.astype(bool)).float()[None]
    kappa = strength * float(x0.std().clamp_min(1e-3))
    x = x0.clone()
    for _ in range(steps):
        x.requires_grad_(True)
        amp = torch.fft.fft2(x, norm="ortho").abs()  # per channel, summed over every frequency but DC
        loss = -lam * kappa * (amp.sum(dim=(-2, -1)) - amp[..., 0, 0]).sum() + 0.5 * ((x - x0) ** 2).sum()
        grad, = torch.autograd.grad(loss, x)
        with torch.no_grad():
            x = (x - step_size * grad * bg).clamp(0, 1)
    out = (x * 255).round().clamp(0, 255).byte().permute(1, 2, 0).numpy()
    return np.where(mask[..., None].astype(bool), image, out)


def adversarial_backgrounds(model, x, m, labels: Sequence[int], eps: float = ADV_EPS, steps: int = ADV_STEPS
                            ) -> np.ndarray:
    """A batch of same-size images `x` (N,3,H,W) float in [0,1] (k/255 for a byte k, as the feed
    gives them) with their object masks `m` (N,1,H,W) {0,1}, their backgrounds changed (PGD, L-inf
    `eps`) to raise `model`'s cross-entropy on the true labels, as (N,H,W,3) uint8 on the host. For
    1000-class models the loss is over the dataset's classes via log of the summed class
    probabilities (the superclass rule). The object's pixels are left out of every step, and k/255
    times 255 rounds back to k for every byte, so they come out bit-identical."""
    import torch
    bg = 1 - m
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long, device=x.device)
    step = 2.5 * eps / steps
    delta = torch.zeros_like(x, requires_grad=True)
    for _ in range(steps):
        logits = model((x + delta * bg).clamp(0, 1))
        loss = (torch.nn.functional.nll_loss(_superclass_log_probs(logits), y) if model.spec.label_space == IMAGENET1K
                else torch.nn.functional.cross_entropy(logits, y))
        grad, = torch.autograd.grad(loss, delta)
        with torch.no_grad():
            delta += step * grad.sign()
            delta.clamp_(-eps, eps)
    out = ((x + delta.detach() * bg).clamp(0, 1) * 255).round().byte()
    return np.ascontiguousarray(out.permute(0, 2, 3, 1).cpu().numpy())


def _superclass_log_probs(logits):
    """log of the probability mass of each IN-9 class (the 'superclass' rule), for 1000-class models."""
    return superclass_sums(logits.float().softmax(dim=1)).clamp_min(1e-12).log()
