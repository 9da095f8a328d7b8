"""Blended guided diffusion, as ImageNet-E's toolkit edits a region of an image
(`editing_diffusion/optimization/image_editor.py` with guided-diffusion's `p_sample_loop_progressive`).

Start from `start` (the toolkit's `-i`: the object removed) noised to step T - skip - 1, and at
every step i, down to 0:
- the network's noise and learned variance give x0_hat and the posterior mean (`Schedule`);
- the guidance gradient of `Guidance`'s loss with respect to x_t, through x0_hat predicted again
  at the toolkit's `unscale_timestep` index, moves the mean by variance x gradient
  (`condition_mean`); the loss is -lambda * mean|FFT((x0_hat + 1) / 2)| with `hard` (+lambda
  without), plus the range, L2 and LPIPS terms where their weights are set; with a classifier
  (the adversarial level), `class_guided`'s -scale * d log p(y | x0_hat) / d x0_hat is added as it
  is, a gradient in x0_hat's space added to one in x_t's, as the toolkit adds it;
- the sample (mean + sigma z, no noise at step 0) is blended with `keep` (the toolkit's `-i2`)
  noised to step i, outside the edited region (`postprocess_fn`); with `coarse_to_fine` the
  region is eroded by 51 and 31 px max pools while i > 50 and i > 35;
- at the end, x0_hat of the last step, with the kept region pasted back from `keep`
  (`enforce_background`).

Every image of a batch draws from its own generator, in the toolkit's order (the start noise,
then per step the sample's noise and the blend's), so a batch gives what one image at a time
gives. The toolkit averages its losses over the batch, which scales each image's gradient by
1 / batch; here each image's loss is its own (the toolkit runs one image per call, where the two
agree).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

from .diffusion_weights import split_output
from .schedule import Schedule


@dataclass(frozen=True)
class Guidance:
    """The weights of the guidance loss (image_editor.py's arguments)."""

    complexity: float = 0.0  # background_complex: lambda
    hard: bool = True  # run.sh's `[ $1 > 0 ]` is always true, so every level runs with --hard
    range_lambda: float = 50.0  # arguments.py's default; run.sh leaves it on
    l2_lambda: float = 0.0  # background_preservation_loss (off in run.sh)
    lpips_lambda: float = 0.0  # background_preservation_loss (off in run.sh)
    coarse_to_fine: bool = False  # commented out in run.sh
    classifier_scale: float = 0.0  # the adversarial level's classifier guidance (arguments.py: 10)

    def active(self) -> bool:
        return bool(self.complexity or self.range_lambda or self.l2_lambda or self.lpips_lambda
                    or self.classifier_scale)

    def to_dict(self) -> dict:
        return asdict(self)


def complexity_loss(x):
    """fft_pytorch.py's HighFrequencyLoss per image: mean |FFT| over channels and every frequency."""
    import torch
    return torch.fft.fftn(x, dim=(2, 3)).abs().mean(dim=(1, 2, 3))


def _randn(generators: Sequence, like):
    import torch
    dtype = like.dtype if like.dtype in (torch.float32, torch.float64) else torch.float32
    draws = [torch.randn(tuple(like.shape[1:]), generator=g, dtype=dtype) for g in generators]
    return torch.stack(draws).to(device=like.device, dtype=like.dtype)


def _predict(unet, schedule: Schedule, x, i: int):
    """(x0_hat, posterior mean, log-variance) of step `i`."""
    import torch
    t = torch.full((x.shape[0],), schedule.model_timestep(i), dtype=torch.float32, device=x.device)
    eps, values = split_output(unet(x, t).sample, x.shape[1])
    x0 = schedule.predict_x0(x, i, eps)
    return x0, schedule.posterior_mean(x0, x, i), schedule.learned_log_variance(i, values)


def _loss(g: Guidance, schedule: Schedule, x, x0, j: int, start, mask, lpips_model):
    loss = 0
    if g.complexity:
        term = g.complexity * complexity_loss((x0 + 1.0) / 2.0).sum()
        loss = loss - term if g.hard else loss + term
    if g.range_lambda:
        loss = loss + (x0 - x0.clamp(-1, 1)).pow(2).mean(dim=(1, 2, 3)).sum() * g.range_lambda
    if g.l2_lambda or g.lpips_lambda:  # background_preservation_loss: the edited region kept near -i
        fac = schedule._at(schedule.sqrt_1m_ac, j, x)
        kept = (x0 * fac + x * (1 - fac)) * mask
        if g.lpips_lambda:
            loss = loss + lpips_model(kept, start * mask).sum() * g.lpips_lambda
        if g.l2_lambda:
            loss = loss + ((kept - start * mask) ** 2).mean(dim=(1, 2, 3)).sum() * g.l2_lambda
    return loss


def _region(mask, i: int, coarse_to_fine: bool):
    """The edited region blended at step `i`: eroded early on with `coarse_to_fine`."""
    import torch.nn.functional as F
    kernel = (51 if i > 50 else 31 if i > 35 else 0) if coarse_to_fine else 0
    if not kernel:
        return mask
    return 1 - F.max_pool2d(1 - mask, kernel, stride=1, padding=(kernel - 1) // 2)


def _class_gradient(classifier, x0, scale: float):
    """class_guided: -scale * d sum log p(y | x0) / d x0, with x0 detached from x_t."""
    import torch
    x_in = x0.detach().requires_grad_(True)
    return -torch.autograd.grad(classifier(x_in).sum(), x_in)[0] * scale


def blended_diffusion(unet, schedule: Schedule, start, keep, mask, guidance: Guidance, generators: Sequence,
                      skip: int, lpips_model=None, classifier: Optional[Callable] = None):
    """The edit of a batch (see the module docstring): `start` and `keep` Bx3xHxW in [-1, 1], `mask`
    Bx1xHxW, 1 in the region to edit; one torch.Generator per image; `classifier` maps x0_hat to
    each image's log p(true class) (used where `guidance.classifier_scale` is set). Returns
    Bx3xHxW in [-1, 1] (not clamped)."""
    import torch
    indices = schedule.indices(skip)
    img = schedule.q_sample(start, indices[0], _randn(generators, start))
    x0 = None
    for i in indices:
        j = schedule.guidance_index(i)
        with torch.no_grad():
            if guidance.active():
                with torch.enable_grad():
                    x = img.detach().requires_grad_(True)
                    gx0, gmean, glogvar = _predict(unet, schedule, x, j)
                    loss = _loss(guidance, schedule, x, gx0, j, start, mask, lpips_model)
                    grad = (-torch.autograd.grad(loss, x)[0] if torch.is_tensor(loss) and loss.requires_grad
                            else torch.zeros_like(x))
                    if guidance.classifier_scale and classifier is not None:
                        grad = grad + _class_gradient(classifier, gx0, guidance.classifier_scale)
                if j == i:  # the toolkit's first forward pass gives the same numbers: reuse them
                    x0, mean, logvar = gx0.detach(), gmean.detach(), glogvar.detach()
                else:
                    x0, mean, logvar = _predict(unet, schedule, img, i)
            else:
                x0, mean, logvar = _predict(unet, schedule, img, i)
                grad = None
            noise = _randn(generators, img)
            if grad is not None:
                mean = mean + torch.exp(logvar) * grad
            sample = mean + (torch.exp(0.5 * logvar) * noise if i != 0 else 0.0)
            region = _region(mask, i, guidance.coarse_to_fine)
            img = sample * region + schedule.q_sample(keep, i, _randn(generators, keep)) * (1 - region)
    return keep * (1 - mask) + x0 * mask
