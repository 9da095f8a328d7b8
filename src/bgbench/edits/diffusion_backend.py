"""Images in, images out for the diffusion backend: ImageNet-E's background-complexity levels made
by blended guided diffusion (`diffusion.blended_diffusion`), as run.sh calls the toolkit's
`main.py`: `-i` the object removed (bgbench's inpainter), `-i2` the image, `--mask` the object's
mask inverted (the background is edited), `--background_complex lambda --hard`, no CLIP, no
classifier, 100 respaced steps of which the first `skip` are skipped.

The toolkit resizes every image to the model's 256 px (LANCZOS, the mask NEAREST) and writes
256 px results. bgbench writes the dataset's own size: the diffusion runs at `size` px and its
result is resized back (LANCZOS) before the object is pasted back from the source at full
resolution, so the object's pixels stay bit-identical.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import numpy as np

from .diffusion import Guidance, blended_diffusion
from .diffusion_weights import DiffusionWeights
from .schedule import Schedule


@dataclass(frozen=True)
class DiffusionSettings:
    respacing: str = "100"
    skip: int = 90  # app.py's default of 10 steps of run.sh's 100
    size: Optional[int] = None  # the diffusion's square size (None: the model's sample size)
    guidance: Guidance = field(default_factory=Guidance)


def _resized(image: np.ndarray, size: int, nearest: bool = False) -> np.ndarray:
    from PIL import Image
    if image.shape[:2] == (size, size):
        return image
    return np.asarray(Image.fromarray(image).resize((size, size), Image.NEAREST if nearest else Image.LANCZOS))


def _tensor(images: Sequence[np.ndarray], size: int, dtype, device):
    import torch
    arr = np.stack([_resized(im, size) for im in images]).astype(np.float32) / 255.0
    return torch.from_numpy(arr).permute(0, 3, 1, 2).to(device=device, dtype=dtype) * 2 - 1


def diffuse_backgrounds(weights: DiffusionWeights, images: Sequence[np.ndarray], masks: Sequence[np.ndarray],
                        backgrounds: Sequence[np.ndarray], lam: float, seeds: Sequence[int],
                        settings: DiffusionSettings, lpips_model=None, dtype=None, device="cpu",
                        classifier=None) -> List[np.ndarray]:
    """Same-size HxWx3 uint8 images with their backgrounds (outside `masks`) regenerated at
    complexity level `lam`, started from `backgrounds` (the object removed); one seed per image."""
    import torch
    from dataclasses import replace
    unet = weights.unet
    dtype = dtype or next(unet.parameters()).dtype
    size = settings.size or weights.sample_size
    keep = _tensor(images, size, dtype, device)
    start = _tensor(backgrounds, size, dtype, device)
    small = np.stack([_resized(m.astype(np.uint8) * 255, size, nearest=True) > 127 for m in masks])
    edit = torch.from_numpy(~small).to(device=device, dtype=dtype)[:, None]
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    out = blended_diffusion(unet, Schedule(settings.respacing), start, keep, edit,
                            replace(settings.guidance, complexity=float(lam)), gens, settings.skip, lpips_model,
                            classifier)
    # the toolkit's to_pil_image: (x + 1) / 2 clamped, times 255, truncated to bytes
    pics = ((out.detach() + 1) / 2).clamp(0, 1).mul(255).to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    done = []
    for image, mask, pic in zip(images, masks, pics):
        h, w = image.shape[:2]
        if pic.shape[:2] != (h, w):
            from PIL import Image
            pic = np.asarray(Image.fromarray(pic).resize((w, h), Image.LANCZOS))
        done.append(np.where(mask[..., None].astype(bool), image, pic))
    return done


def need_lpips():
    """The `lpips` module, or one line naming the extra that installs it."""
    from ..errors import BgbenchError
    try:
        import lpips
    except ImportError:
        raise BgbenchError("--lpips-lambda needs lpips, an optional extra: pip install 'bgbench[diffusion]'") from None
    return lpips


def lpips_for(settings: DiffusionSettings, device="cpu"):
    """The toolkit's LPIPS (VGG) when its weight is set, else None; one line without the package."""
    if not settings.guidance.lpips_lambda:
        return None
    from ..errors import BgbenchError
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
    import torch
    import torch.nn.functional as F
    from ..models.spec import IMAGENET1K
    from .complexity import _superclass_log_probs
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    size = tuple(int(v) for v in image_size)

    where = next((p.device for p in model.parameters()), None) if hasattr(model, "parameters") else None

    def log_p(x0):
        x = (x0 + 1) / 2
        if where is not None and x.device != where:  # the classifier stays where it was loaded
            x = x.to(where)
        if tuple(x.shape[-2:]) != size:
            x = F.interpolate(x, size=size, mode="bilinear", align_corners=False)
        logits = model(x.float())
        lp = _superclass_log_probs(logits) if model.spec.label_space == IMAGENET1K else logits.float().log_softmax(1)
        return lp.gather(1, y[:, None].to(lp.device))[:, 0].to(x0.dtype)
    return log_p
