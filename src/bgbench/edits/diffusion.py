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

`diffuse_backgrounds`, images in and images out: ImageNet-E's background-complexity levels made
by `blended_diffusion`, as run.sh calls the toolkit's
`main.py`: `-i` the object removed (bgbench's inpainter), `-i2` the image, `--mask` the object's
mask inverted (the background is edited), `--background_complex lambda --hard`, no CLIP, no
classifier, 100 respaced steps of which the first `skip` are skipped.

The toolkit resizes every image to the model's 256 px (LANCZOS, the mask NEAREST) and writes
256 px results. bgbench writes the dataset's own size: the diffusion runs at `size` px and its
result is resized back (LANCZOS) before the object is pasted back from the source at full
resolution, so the object's pixels stay bit-identical.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from ..errors import BgbenchError
from .diffusion_weights import DiffusionWeights
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


def _randn(generators: Sequence, like):
    dtype = like.dtype if like.dtype in (torch.float32, torch.float64) else torch.float32
    return torch.stack([torch.randn(tuple(like.shape[1:]), generator=g, dtype=dtype) for g in generators]).to(
        device=like.device, dtype=like.dtype)


def _predict(unet, schedule: Schedule, x, i: int):
    """(x0_hat, posterior mean, log-variance) of step `i`."""
    t = torch.full((x.shape[0],), float(schedule.timestep_map[i]), dtype=torch.float32, device=x.device)
    out = unet(x, t).sample  # a learned-sigma network: the noise, then variance values in [-1, 1]
    eps, values = out[:, :x.shape[1]], out[:, x.shape[1]:]
    x0 = schedule.predict_x0(x, i, eps)
    return x0, schedule.posterior_mean(x0, x, i), schedule.learned_log_variance(i, values)


def _loss(g: Guidance, schedule: Schedule, x, x0, j: int, start, mask, lpips_model):
    loss = 0
    if g.complexity:
        # fft_pytorch.py's HighFrequencyLoss per image: mean |FFT| over channels and every frequency
        term = g.complexity * torch.fft.fftn((x0 + 1.0) / 2.0, dim=(2, 3)).abs().mean(dim=(1, 2, 3)).sum()
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
    kernel = (51 if i > 50 else 31 if i > 35 else 0) if coarse_to_fine else 0
    if not kernel:
        return mask
    return 1 - F.max_pool2d(1 - mask, kernel, stride=1, padding=(kernel - 1) // 2)


def blended_diffusion(unet, schedule: Schedule, start, keep, mask, guidance: Guidance, generators: Sequence,
                      skip: int, lpips_model=None, classifier: Optional[Callable] = None):
    """The edit of a batch (see the module docstring): `start` and `keep` Bx3xHxW in [-1, 1], `mask`
    Bx1xHxW, 1 in the region to edit; one torch.Generator per image; `classifier` maps x0_hat to
    each image's log p(true class) (used where `guidance.classifier_scale` is set). Returns
    Bx3xHxW in [-1, 1] (not clamped)."""
    indices = schedule.indices(skip)
    img = schedule.q_sample(start, indices[0], _randn(generators, start))
    x0 = None
    for i in indices:
        j = schedule.guidance_index(i)
        grad = guided = None
        with torch.no_grad():
            if guidance.active():
                with torch.enable_grad():
                    x = img.detach().requires_grad_(True)
                    gx0, gmean, glogvar = _predict(unet, schedule, x, j)
                    loss = _loss(guidance, schedule, x, gx0, j, start, mask, lpips_model)
                    grad = (-torch.autograd.grad(loss, x)[0] if torch.is_tensor(loss) and loss.requires_grad
                            else torch.zeros_like(x))
                    if guidance.classifier_scale and classifier is not None:
                        # class_guided: -scale * d sum log p(y | x0) / d x0, with x0 detached from x_t
                        x_in = gx0.detach().requires_grad_(True)
                        grad = grad - torch.autograd.grad(classifier(x_in).sum(), x_in)[0] * guidance.classifier_scale
                if j == i:  # the toolkit's first forward pass gives the same numbers: reuse them
                    guided = gx0.detach(), gmean.detach(), glogvar.detach()
            x0, mean, logvar = guided or _predict(unet, schedule, img, i)
            noise = _randn(generators, img)
            if grad is not None:
                mean = mean + torch.exp(logvar) * grad
            sample = mean + (torch.exp(0.5 * logvar) * noise if i != 0 else 0.0)
            region = _region(mask, i, guidance.coarse_to_fine)
            img = sample * region + schedule.q_sample(keep, i, _randn(generators, keep)) * (1 - region)
    return keep * (1 - mask) + x0 * mask


def _resized(image: np.ndarray, hw, nearest: bool = False) -> np.ndarray:
    """`image` at (H, W) `hw` (LANCZOS, or NEAREST for a mask), untouched at that size already."""
    if image.shape[:2] == tuple(hw):
        return image
    return np.asarray(Image.fromarray(image).resize((hw[1], hw[0]), Image.NEAREST if nearest else Image.LANCZOS))


def _tensor(images: Sequence[np.ndarray], size: int, dtype, device):
    arr = np.stack([_resized(im, (size, size)) for im in images]).astype(np.float32) / 255.0
    return torch.from_numpy(arr).permute(0, 3, 1, 2).to(device=device, dtype=dtype) * 2 - 1


def diffuse_backgrounds(weights: DiffusionWeights, images: Sequence[np.ndarray], masks: Sequence[np.ndarray],
                        backgrounds: Sequence[np.ndarray], seeds: Sequence[int], guidance: Guidance,
                        respacing: str = "100", skip: int = 90, size: Optional[int] = None, lpips_model=None,
                        dtype=None, device="cpu", classifier=None) -> List[np.ndarray]:
    """Same-size HxWx3 uint8 images with their backgrounds (outside `masks`) regenerated under
    `guidance` (its complexity level lambda), started from `backgrounds` (the object removed); one
    seed per image. `respacing` steps kept of the 1,000, the first `skip` of them skipped (app.py's
    default: 10 of run.sh's 100), at `size` px square (None: the model's sample size)."""
    unet = weights.unet
    dtype = dtype or next(unet.parameters()).dtype
    size = size or weights.sample_size
    keep = _tensor(images, size, dtype, device)
    start = _tensor(backgrounds, size, dtype, device)
    small = np.stack([_resized(m.astype(np.uint8) * 255, (size, size), nearest=True) > 127 for m in masks])
    edit = torch.from_numpy(~small).to(device=device, dtype=dtype)[:, None]
    out = blended_diffusion(unet, Schedule(respacing), start, keep, edit, guidance,
                            [torch.Generator().manual_seed(int(s)) for s in seeds], skip, lpips_model, classifier)
    # the toolkit's to_pil_image: (x + 1) / 2 clamped, times 255, truncated to bytes
    pics = ((out.detach() + 1) / 2).clamp(0, 1).mul(255).to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    return [np.where(mask[..., None].astype(bool), image, _resized(pic, image.shape[:2]))
            for image, mask, pic in zip(images, masks, pics)]


def need_lpips():
    """The `lpips` module, or one line naming the extra that installs it."""
    try:
        import lpips
    except ImportError:
        raise BgbenchError("--lpips-lambda needs lpips, an optional extra: pip install 'bgbench[diffusion]'") from None
    return lpips


def lpips_for(lpips_lambda: float, device="cpu"):
    """The toolkit's LPIPS (VGG) when its weight `lpips_lambda` is set, else None; one line without
    the package."""
    if not lpips_lambda:
        return None
    lpips = need_lpips()
    try:
        return lpips.LPIPS(net="vgg", verbose=False).to(device).eval()
    except Exception as e:  # torchvision's VGG weights are fetched on first use: offline, that fails
        raise BgbenchError(f"--lpips-lambda: LPIPS's VGG weights cannot be loaded "
                           f"({type(e).__name__}: {' '.join(str(e).split())[:160]})") from None


def class_log_prob(model, labels: Sequence[int], image_size):
    """x0_hat (Bx3xSxS in [-1, 1]) -> each image's log-probability of its true class under `model`
    (a bgbench model on [0, 1] images of the dataset's size; for 1000-class models the log of the
    class's summed probabilities, the superclass rule): the adversarial level's classifier."""
    from ..models.spec import IMAGENET1K
    from .complexity import _superclass_log_probs
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    size = tuple(int(v) for v in image_size)

    def log_p(x0):  # the classifier is on x0's device
        x = (x0 + 1) / 2
        if tuple(x.shape[-2:]) != size:
            x = F.interpolate(x, size=size, mode="bilinear", align_corners=False)
        logits = model(x.float())
        lp = _superclass_log_probs(logits) if model.spec.label_space == IMAGENET1K else logits.float().log_softmax(1)
        return lp.gather(1, y[:, None].to(lp.device))[:, 0].to(x0.dtype)
    return log_p
