"""Grad-CAM maps as RIVAL10 used them: Captum's LayerGradCam, then pytorch-grad-cam's post-processing.

RIVAL10 takes its maps from pytorch-grad-cam, whose `GradCAM` returns, per image: ReLU(Σ_c w_c·A_c)
rescaled to [0,1] (minus its minimum, over 1e-7 plus its maximum) at feature resolution,
`cv2.resize`d (bilinear) to the image, rescaled to [0,1] once more (its multi-layer
aggregation), with NaN set to 0 by RIVAL10. Alignment measures depend on all of it (a map whose
minimum is above 0 loses that floor), so `gradcam_maps` repeats it step for step.

Vision transformers give tokens, not a grid: the patch tokens (after the class/prefix tokens) are
reshaped to the patch grid before Grad-CAM, as RIVAL10's `vit_reshape_transform` does. The
default layer is the last block's `norm1` (RIVAL10's choice, and pytorch-grad-cam's advice for
ViTs); for other timm models, the last feature stage. Networks of other libraries name their ViT
layer themselves (`vit_layer()`: open_clip's `ln_1`, transformers' `layernorm_before` or `norm1`,
each the last block's pre-attention norm) and give their `patch_size`; their prefix tokens (class,
registers, distillation) are what the token count leaves beside the patch grid. The grid is that
of the input the network receives, after the wrapper's resize (`BgModel.net_input_hw`).

No files, no store: tensors in, arrays out.
"""
from __future__ import annotations

import contextlib
from typing import Optional, Tuple

import numpy as np

from ..errors import BgbenchError


def token_layout(net) -> Optional[Tuple[Optional[int], Tuple[int, int]]]:
    """(prefix tokens, patch size) of a vision transformer, or None for other networks. The prefix is
    None for a network that names its own ViT layer: the token count then tells it."""
    if callable(getattr(net, "vit_layer", None)):
        return (None, tuple(net.patch_size)) if net.vit_layer() else None
    embed = getattr(net, "patch_embed", None)
    patch = getattr(embed, "patch_size", None)
    if embed is None or patch is None or not hasattr(net, "blocks"):
        return None
    patch = tuple(patch) if isinstance(patch, (tuple, list)) else (int(patch), int(patch))
    return int(getattr(net, "num_prefix_tokens", 1)), (int(patch[0]), int(patch[1]))


def default_layer(net) -> str:
    """A ViT's last block's norm1 (or the layer the network names); else a timm model's last feature
    stage; else the last convolution."""
    if callable(getattr(net, "vit_layer", None)) and net.vit_layer():
        return net.vit_layer()
    if token_layout(net) is not None:
        name = f"blocks.{len(net.blocks) - 1}.norm1"
        with contextlib.suppress(AttributeError):
            net.get_submodule(name)
            return name
    with contextlib.suppress(AttributeError, KeyError, IndexError, TypeError):  # not a timm model with feature_info
        info = net.feature_info
        name = info[-1]["module"] if isinstance(info, list) else info.module_name()[-1]
        net.get_submodule(name)
        return name
    import torch.nn as nn
    convs = [n for n, mod in net.named_modules() if isinstance(mod, nn.Conv2d)]
    if not convs:
        raise BgbenchError("cannot find a convolutional layer for Grad-CAM; name one with --layer")
    return convs[-1]


def resolve_layer(model, name: Optional[str]):
    """(name, module) of the Grad-CAM target layer inside model.net."""
    name = name or default_layer(model.net)
    try:
        return name, model.net.get_submodule(name)
    except AttributeError:
        names = [n for n, _ in model.net.named_modules() if n][-8:]
        raise BgbenchError(f"--layer {name!r} is not a module of {model.spec.name} "
                           f"(last ones: {', '.join(names)})") from None


@contextlib.contextmanager
def cam_site(model, layer, image_hw: Tuple[int, int]):
    """The module Captum attributes to. For a CNN, `layer` itself. For a ViT, an identity module
    that a forward hook on `layer` (removed on exit) routes the output through: a (N, tokens, C)
    output as the (N, C, h, w) grid of its patch tokens (the prefix tokens dropped, as RIVAL10's
    `vit_reshape_transform`), a spatial output as it is."""
    import torch
    import torch.nn as nn
    tokens = token_layout(model.net)
    if tokens is None:
        yield layer
        return
    prefix, (ph, pw) = tokens
    seen_hw = model.net_input_hw(image_hw) if hasattr(model, "net_input_hw") else image_hw
    grid_h, grid_w = seen_hw[0] // ph, seen_hw[1] // pw
    grid = nn.Identity()

    def through_grid(module, inputs, out):
        if not torch.is_tensor(out) or out.dim() != 3:
            return grid(out)
        n, count, c = out.shape
        lead = count - grid_h * grid_w if prefix is None else prefix
        if lead < 0 or count - lead != grid_h * grid_w:
            shown = "prefix tokens" if prefix is None else f"{prefix} prefix"
            raise BgbenchError(f"the Grad-CAM layer gives {count} tokens, not {shown} + {grid_h}x{grid_w} "
                               "patch tokens; name a transformer block's layer with --layer")
        patches = grid(out[:, lead:].reshape(n, grid_h, grid_w, c).permute(0, 3, 1, 2))
        return torch.cat([out[:, :lead], patches.permute(0, 2, 3, 1).reshape(n, grid_h * grid_w, c)], dim=1)

    handle = layer.register_forward_hook(through_grid)
    try:
        yield grid
    finally:
        handle.remove()


def gradcam_batch(model, layer, x, target=None):
    """(maps (N,H,W) float32 in [0,1] as pytorch-grad-cam returns them, raw predicted class (N,)).

    The map is of the predicted class, or of `target` ((N,) raw output indices) where given: Hard
    ImageNet's `saliency_analysis.py` takes the true class (`ClassifierOutputTarget(label)`).
    `gradcam_terms` runs the network, `gradcam_maps` makes the maps on the host.
    """
    terms, preds = gradcam_terms(model, layer, x, target)
    return gradcam_maps(terms.detach().float().cpu().numpy(), tuple(x.shape[-2:])), preds


def gradcam_terms(model, layer, x, target=None):
    """(Captum's per-channel terms mean(∂y/∂A_c)·A_c (N, C, h, w), raw predicted class (N,)), both
    on the device, nothing read back: the probe queues the next batch before it reads them."""
    import torch
    from captum.attr import LayerGradCam

    from ..evaluation.feed import to_device
    with torch.no_grad():
        preds = model(x).argmax(dim=1)
    target = preds if target is None else to_device(torch.as_tensor(target), preds.device)
    eager = getattr(model, "eager", contextlib.nullcontext)  # a compiled forward would skip the layer's hooks
    with eager(), cam_site(model, layer, tuple(x.shape[-2:])) as site:
        terms = LayerGradCam(model, site).attribute(x, target=target, relu_attributions=False,
                                                    attr_dim_summation=False)
    if terms.dim() != 4:
        raise BgbenchError(f"Grad-CAM needs a layer with a spatial (N, C, h, w) output; got shape "
                           f"{tuple(terms.shape)}: name another one with --layer")
    return terms, preds


def gradcam_maps(terms: np.ndarray, image_hw: Tuple[int, int]) -> np.ndarray:
    """The maps (N,H,W) from Captum's terms (N, C, h, w) float32 on the host: summed over channels
    and ReLU'd in NumPy float32, as pytorch-grad-cam does, so that the two maps agree to the last
    bit wherever the gradients do (the order of a float32 sum changes its last bits, and RIVAL10's
    thresholded measures can flip a pixel on them); then pytorch-grad-cam's GradCAM output: scaled to
    [0,1] at feature resolution, cv2.resize (bilinear) to the image, scaled to [0,1] again, NaN to 0
    (RIVAL10)."""
    import cv2
    cam = np.maximum(terms.sum(axis=1), 0)
    first = [cv2.resize(np.float32(_scale(c)), (image_hw[1], image_hw[0])) for c in cam]
    out = np.float32([_scale(c) for c in first])
    out[np.isnan(out)] = 0
    return out


def device_maps(terms, image_hw: Tuple[int, int]):
    """`gradcam_maps` where the terms lie, for a probe on a card: (N, H, W) float32 from Captum's
    terms (N, C, h, w), each step pytorch-grad-cam's (ReLU of the channel sum, min-max at feature
    resolution, bilinear resize with half-pixel centres as `cv2.resize`'s, min-max again, NaN to
    0) in torch's float32, whose sums and interpolation round their last bits otherwise than
    NumPy's and OpenCV's (within 1e-6 of `gradcam_maps`, `tests/measures/test_saliency.py`)."""
    import torch
    cam = terms.float().sum(dim=1).clamp_min_(0)
    # feature_maps.upsample's resize, written here: that module imports this one, and layers never circle
    first = torch.nn.functional.interpolate(_device_scale(cam)[:, None], size=tuple(image_hw), mode="bilinear",
                                            align_corners=False)[:, 0]
    return torch.nan_to_num_(_device_scale(first), nan=0.0)


def _device_scale(img):
    """`_scale` of each map of a batch (N, H, W): minus its min, over 1e-7 plus its max."""
    img = img - img.amin(dim=(1, 2), keepdim=True)
    return img / (img.amax(dim=(1, 2), keepdim=True) + 1e-7)


def _scale(img: np.ndarray) -> np.ndarray:
    """pytorch-grad-cam's `scale_cam_image` without resize: minus the min, over 1e-7 plus the max."""
    img = img - np.min(img)
    return img / (1e-7 + np.max(img))
