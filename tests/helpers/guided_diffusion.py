"""An oracle of ImageNet-E's editing loop, written for the tests from the toolkit's definitions
(alibaba/easyrobust, benchmarks/imagenet-e/ImageNet-Editing/editing_diffusion: guided_diffusion's
unet.py, gaussian_diffusion.py and respace.py; optimization/image_editor.py; utils/fft_pytorch.py),
in plain torch and numpy. It imports nothing of bgbench, so bgbench's loader and sampler are
checked against the definitions, not against themselves.

What it keeps of the toolkit, as the toolkit has it:
- ADM's UNet with guided-diffusion's parameter names (so its state dict is a guided-diffusion
  checkpoint), QKV attention in the legacy order (heads split before q, k, v), scale-shift norm,
  residual up/down-sampling, a sinusoidal embedding [cos, sin] of the float timestep;
- the linear schedule in float64, respaced by `space_timesteps`, the model called at the original
  timestep (rescale_timesteps with 1000 steps: a factor of 1), learned-range variance between the
  clipped posterior log-variance and log beta;
- `p_sample_loop_progressive` from the input noised to index T - skip - 1 with the global RNG,
  `p_sample`'s noise drawn before `cond_fn`, the guided mean `mean + variance * cond`;
- `cond_fn`: x0 predicted again with gradients at `unscale_timestep(timestep_map[t])`, the loss
  -lambda * mean|fftn((x0+1)/2)| (or +lambda without --hard), the range loss
  sum over the batch of mean((x0 - clamp(x0))^2) * range_lambda; the gradient -d loss / d x;
- `postprocess_fn`: the sample blended with q_sample(init_image_2, t) outside the edited region
  (the region eroded by 51 / 31 px max pools while t > 50 / t > 35 with coarse_to_fine), one
  noise of the image's shape;
- background_preservation_loss: x_in = x0 * fac + x * (1 - fac), fac = sqrt(1 - alphas_cumprod) at
  the unscaled index, its edited region against the start's: LPIPS summed, and torch's mse_loss
  (a mean over every element);
- `class_guided` (the adversarial level): -scale * d sum log softmax(classifier(x0))[y] / d x0,
  x0 detached, added to cond_fn's gradient as it is;
- the output: the last step's pred_xstart, the kept region pasted from init_image_2.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as Fn
from torch import nn


# ---------------------------------------------------------------------------------------------
# ADM's network, parameter for parameter

def _gn(ch):
    return nn.GroupNorm(32, ch)


class Res(nn.Module):
    def __init__(self, ch, emb, out=None, up=False, down=False):
        super().__init__()
        out = out or ch
        self.in_layers = nn.Sequential(_gn(ch), nn.SiLU(), nn.Conv2d(ch, out, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb, 2 * out))
        self.out_layers = nn.Sequential(_gn(out), nn.SiLU(), nn.Dropout(0.0), nn.Conv2d(out, out, 3, padding=1))
        self.skip_connection = nn.Identity() if out == ch else nn.Conv2d(ch, out, 1)
        self.up, self.down = up, down

    def _resample(self, x):
        if self.up:
            return Fn.interpolate(x, scale_factor=2, mode="nearest")
        if self.down:
            return Fn.avg_pool2d(x, 2, 2)
        return x

    def forward(self, x, emb):
        h = self.in_layers[1](self.in_layers[0](x))
        h, x = self._resample(h), self._resample(x)
        h = self.in_layers[2](h)
        scale, shift = self.emb_layers(emb)[:, :, None, None].chunk(2, dim=1)
        h = self.out_layers[0](h) * (1 + scale) + shift
        h = self.out_layers[3](self.out_layers[2](self.out_layers[1](h)))
        return self.skip_connection(x) + h


class Attn(nn.Module):
    def __init__(self, ch, head_channels):
        super().__init__()
        self.heads = ch // head_channels
        self.norm = _gn(ch)
        self.qkv = nn.Conv1d(ch, 3 * ch, 1)
        self.proj_out = nn.Conv1d(ch, ch, 1)

    def forward(self, x):
        b, c, hh, ww = x.shape
        flat = x.reshape(b, c, -1)
        qkv = self.qkv(self.norm(flat))
        ch = c // self.heads
        q, k, v = qkv.reshape(b * self.heads, 3 * ch, -1).split(ch, dim=1)  # legacy: heads, then q/k/v
        s = 1 / math.sqrt(math.sqrt(ch))
        w = torch.softmax(torch.einsum("bct,bcs->bts", q * s, k * s), dim=-1)
        a = torch.einsum("bts,bcs->bct", w, v).reshape(b, c, -1)
        return (flat + self.proj_out(a)).reshape(b, c, hh, ww)


class Seq(nn.ModuleList):
    def forward(self, x, emb):
        for m in self:
            x = m(x, emb) if isinstance(m, Res) else m(x)
        return x


class ADM(nn.Module):
    """guided-diffusion's UNetModel (learn_sigma, use_scale_shift_norm, resblock_updown)."""

    def __init__(self, model_channels=32, channel_mult=(1, 2), num_res_blocks=1, attention_resolutions=(2,),
                 head_channels=16, in_channels=3, out_channels=6):
        super().__init__()
        self.mc = model_channels
        emb = 4 * model_channels
        self.time_embed = nn.Sequential(nn.Linear(model_channels, emb), nn.SiLU(), nn.Linear(emb, emb))
        ch = model_channels
        self.input_blocks = nn.ModuleList([Seq([nn.Conv2d(in_channels, ch, 3, padding=1)])])
        chans, ds = [ch], 1
        for level, mult in enumerate(channel_mult):
            for _ in range(num_res_blocks):
                layers = [Res(ch, emb, mult * model_channels)]
                ch = mult * model_channels
                if ds in attention_resolutions:
                    layers.append(Attn(ch, head_channels))
                self.input_blocks.append(Seq(layers))
                chans.append(ch)
            if level != len(channel_mult) - 1:
                self.input_blocks.append(Seq([Res(ch, emb, down=True)]))
                chans.append(ch)
                ds *= 2
        self.middle_block = Seq([Res(ch, emb), Attn(ch, head_channels), Res(ch, emb)])
        self.output_blocks = nn.ModuleList()
        for level, mult in list(enumerate(channel_mult))[::-1]:
            for i in range(num_res_blocks + 1):
                layers = [Res(ch + chans.pop(), emb, model_channels * mult)]
                ch = model_channels * mult
                if ds in attention_resolutions:
                    layers.append(Attn(ch, head_channels))
                if level and i == num_res_blocks:
                    layers.append(Res(ch, emb, up=True))
                    ds //= 2
                self.output_blocks.append(Seq(layers))
        self.out = nn.Sequential(_gn(ch), nn.SiLU(), nn.Conv2d(model_channels, out_channels, 3, padding=1))

    def embedding(self, t):
        half = self.mc // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t):
        emb = self.time_embed(self.embedding(t).to(x.dtype))
        hs, h = [], x
        for m in self.input_blocks:
            h = m(h, emb)
            hs.append(h)
        h = self.middle_block(h, emb)
        for m in self.output_blocks:
            h = m(torch.cat([h, hs.pop()], dim=1), emb)
        return self.out(h)


def random_adm(seed=0, **kw) -> ADM:
    """A tiny ADM with every parameter random (ADM zero-initialises its last convolutions, which
    would make the network a constant and the comparison empty)."""
    torch.manual_seed(seed)
    net = ADM(**kw)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if p.dim() == 1:  # norm scales near 1, biases near 0
                p.copy_(0.1 * torch.randn_like(p) + (1.0 if name.endswith("weight") else 0.0))
            else:
                p.copy_(torch.randn_like(p) / math.sqrt(p[0].numel()))
    return net.eval()


# ---------------------------------------------------------------------------------------------
# gaussian_diffusion.py and respace.py

def space_timesteps(n, counts):
    counts = [int(x) for x in str(counts).split(",")]
    size_per, extra = n // len(counts), n % len(counts)
    start, steps = 0, []
    for i, c in enumerate(counts):
        size = size_per + (1 if i < extra else 0)
        stride = 1 if c <= 1 else (size - 1) / (c - 1)
        cur = 0.0
        for _ in range(c):
            steps.append(start + round(cur))
            cur += stride
        start += size
    return sorted(set(steps))


class Diffusion:
    def __init__(self, respacing="100", n=1000):
        base = np.linspace(1000 / n * 0.0001, 1000 / n * 0.02, n, dtype=np.float64)
        abar = np.cumprod(1.0 - base)
        self.timestep_map = space_timesteps(n, respacing)
        last, betas = 1.0, []
        for i, a in enumerate(abar):
            if i in self.timestep_map:
                betas.append(1 - a / last)
                last = a
        b = np.array(betas, dtype=np.float64)
        self.num_timesteps = len(b)
        self.betas = b
        ac = np.cumprod(1.0 - b)
        acp = np.append(1.0, ac[:-1])
        self.ac = ac
        self.sqrt_ac, self.sqrt_1m_ac = np.sqrt(ac), np.sqrt(1.0 - ac)
        self.sqrt_recip_ac, self.sqrt_recipm1_ac = np.sqrt(1.0 / ac), np.sqrt(1.0 / ac - 1)
        self.post_var = b * (1.0 - acp) / (1.0 - ac)
        self.post_logvar = np.log(np.append(self.post_var[1], self.post_var[1:]))
        self.coef1 = b * np.sqrt(acp) / (1.0 - ac)
        self.coef2 = (1.0 - acp) * np.sqrt(1.0 - b) / (1.0 - ac)

    @staticmethod
    def _at(arr, t, x):
        return torch.as_tensor(arr[t], dtype=x.dtype)

    def q_sample(self, x0, t, noise):
        return self._at(self.sqrt_ac, t, x0) * x0 + self._at(self.sqrt_1m_ac, t, x0) * noise

    def model_at(self, model, x, t):
        ts = torch.full((x.shape[0],), float(self.timestep_map[t]), dtype=torch.float32)
        return model(x, ts)

    def p_mean_variance(self, model, x, t):
        out = self.model_at(model, x, t)
        eps, v = out[:, :3], out[:, 3:]
        frac = (v + 1) / 2
        logvar = frac * self._at(np.log(self.betas), t, x) + (1 - frac) * self._at(self.post_logvar, t, x)
        x0 = self._at(self.sqrt_recip_ac, t, x) * x - self._at(self.sqrt_recipm1_ac, t, x) * eps
        mean = self._at(self.coef1, t, x) * x0 + self._at(self.coef2, t, x) * x
        return {"mean": mean, "logvar": logvar, "var": torch.exp(logvar), "x0": x0}

    def unscale(self, t):
        """image_editor.unscale_timestep of the timestep `cond_fn` is called with (the wrapped
        model's: timestep_map[t] as float32, times 1000 / 1000)."""
        ts = torch.tensor([float(self.timestep_map[t])], dtype=torch.float32) * (1000.0 / 1000)
        return int((ts * (self.num_timesteps / 1000)).long()[0])


# ---------------------------------------------------------------------------------------------
# image_editor.py's loop

def hf_loss(x):
    return torch.abs(torch.fft.fftn(x, dim=(2, 3))).mean()


def blend_region(mask, t, coarse_to_fine):
    """postprocess_fn's mask_d: the edited region, eroded (the kept region max-pooled) early on."""
    kernel = (51 if t > 50 else 31 if t > 35 else 0) if coarse_to_fine else 0
    return 1 - Fn.max_pool2d(1 - mask, kernel, 1, (kernel - 1) // 2) if kernel else mask


def edit(model, start, keep, mask, *, seed, respacing="100", skip=90, lam=20.0, hard=True, range_lambda=50.0,
         coarse_to_fine=False, classifier=None, y=None, classifier_scale=0.0, l2_lambda=0.0, lpips_lambda=0.0,
         lpips_model=None):
    """The toolkit's edit of one image: `start` (-i, [-1, 1], 1x3xHxW), `keep` (-i2), `mask` (1 in the
    edited region, 1x1xHxW). The global RNG is seeded with `seed`, as the toolkit does. `classifier`
    maps images in [-1, 1] to logits; with `classifier_scale` and labels `y`, class_guided's
    gradient (in x0's space) is added to the loss's. `l2_lambda` and `lpips_lambda` turn on
    background_preservation_loss (the edited region of x0 * fac + x * (1 - fac) near `start`)."""
    d = Diffusion(respacing)
    torch.manual_seed(seed)
    indices = list(range(d.num_timesteps - skip))[::-1]
    img = torch.randn(*start.shape, dtype=start.dtype)
    img = d.q_sample(start, indices[0], img)

    def class_guided(x, labels):
        with torch.enable_grad():
            x_in = x.detach().requires_grad_(True)
            log_probs = torch.log_softmax(classifier(x_in), dim=-1)
            selected = log_probs[range(len(log_probs)), labels.view(-1)]
            return -torch.autograd.grad(selected.sum(), x_in)[0] * classifier_scale

    def cond_fn(x, t):
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            out = d.p_mean_variance(model, x, d.unscale(t))
            x_in = out["x0"]
            guided = classifier_scale != 0 and y is not None
            if guided:
                gradient_class_guided = class_guided(x_in, y)
            loss = torch.zeros((), dtype=x.dtype)
            if lam:
                term = lam * hf_loss((x_in + 1.0) / 2.0)
                loss = loss - term if hard else loss + term
            if range_lambda:
                loss = loss + (x_in - x_in.clamp(-1, 1)).pow(2).mean([1, 2, 3]).sum() * range_lambda
            if l2_lambda or lpips_lambda:
                fac = float(d.sqrt_1m_ac[d.unscale(t)])
                masked_background = (out["x0"] * fac + x * (1 - fac)) * mask
                if lpips_lambda:
                    loss = loss + lpips_model(masked_background, start * mask).sum() * lpips_lambda
                if l2_lambda:
                    loss = loss + Fn.mse_loss(masked_background, start * mask) * l2_lambda
            grad = -torch.autograd.grad(loss, x)[0]
            return grad + gradient_class_guided if guided else grad

    def postprocess(sample, t):
        m = blend_region(mask, t, coarse_to_fine)
        background = d.q_sample(keep, t, torch.randn_like(keep))
        return sample * m + background * (1 - m)

    out = None
    for t in indices:
        with torch.no_grad():
            out = d.p_mean_variance(model, img, t)
            noise = torch.randn_like(img)
            mean = out["mean"] + out["var"] * cond_fn(img, t)
            sample = mean + (1.0 if t != 0 else 0.0) * torch.exp(0.5 * out["logvar"]) * noise
            img = postprocess(sample, t)
    return keep * (1 - mask) + out["x0"] * mask
