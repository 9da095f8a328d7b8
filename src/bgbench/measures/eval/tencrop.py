"""Ten-crop test-time augmentation (seed 003, Sec. 5.2): Resize(256), TenCrop(224), logits averaged.

The four corners and the centre, and their horizontal mirrors, each go through the model; the
ten logit vectors are averaged. Applied to a [0,1] NCHW batch before the forward pass.
"""
from __future__ import annotations

RESIZE = 256
CROP = 224


def ten_crops(x, resize: int = RESIZE, crop: int = CROP):
    """(N,C,H,W) -> (10N,C,crop,crop), crop-major: torchvision's Resize(resize) then TenCrop(crop)."""
    import torch
    from torchvision.transforms import functional as TF
    x = TF.resize(x, resize, antialias=True)
    return torch.cat(TF.ten_crop(x, crop), dim=0)


def ten_crop_logits(model, x, resize: int = RESIZE, crop: int = CROP):
    """The mean of `model`'s logits over the ten crops of each image in `x`."""
    n = x.shape[0]
    logits = model(ten_crops(x, resize, crop))
    return logits.reshape(10, n, -1).mean(dim=0)
