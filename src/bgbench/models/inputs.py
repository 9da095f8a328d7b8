"""How an image meets a model's input size: the resize policy, recorded in the model's spec.

bgbench feeds images as they are (DESIGN §1): IN-9's images are 224-px centre crops, which is what
ImageNet models expect. Models whose weights fix another input size (a 384-px ViT, a 336-px CLIP,
a tiny ViT built for 16-px images) either take the image as it is or have it resized, and which
one happens is never silent:

- `none`: the image goes in at its own size (the paper's protocol; a convolutional network accepts
  any size, a ViT whose position embeddings are for another size interpolates them or refuses);
- `native`: inside the model wrapper, before normalization, the [0,1] image is resized so that it
  covers the model's input size (shorter side to the target, aspect kept), with the interpolation
  the model's own preprocessing names (antialiased, clamped to [0,1] as an 8-bit image would be),
  then centre-cropped to it. A square image of the native size passes untouched, so 224-px IN-9
  on a 224-px model is bit-identical under both policies. The processor's own resize-then-crop
  (crop_pct) is not applied: IN-9's images are already centre crops.

The policy lives in the spec (so in every run's provenance) and the resize inside the wrapper, so
composites (challenge), noise (probes) and edits are made at the image's own resolution and every
job sees the same model. Constants here are torch-free: the CLI's choices come from them.
"""
from __future__ import annotations

from typing import Tuple

#: Policies a spec records.
RESIZE_POLICIES = ("native", "none")
#: Zero-shot label sets: the scheme's choice, ImageNet's 1000 classes (then a mapping), the dataset's folders.
LABEL_SETS = ("auto", "imagenet", "dataset")
#: What the user may ask for; 'auto' lets the scheme choose (native for openclip:/hf:, whose weights
#: fix an input size; none for timm:/file:/zoo:, as bgbench has always fed them).
RESIZE_CHOICES = ("auto", *RESIZE_POLICIES)
INTERPOLATIONS = ("bilinear", "bicubic", "nearest")
#: The largest side a model may declare for its input: 8192 px (an 8192x8192 RGB image is 0.8 GB
#: of float32 per image). A file that declares more (an ONNX input of 100000x100000, a processor's
#: `shortest_edge: 100000`) is refused before a tensor of that size is allocated.
MAX_SIDE = 8192


def check_input_size(name: str, hw, source: str = "input size") -> Tuple[int, int]:
    """(H, W) when both are whole numbers from 1 to `MAX_SIDE`, else a one-line CheckpointError
    naming the model and where the size came from (`source`)."""
    from ..errors import CheckpointError
    try:
        h, w = (int(v) for v in hw)
        exact = all(float(v) == int(v) for v in hw)
    except (TypeError, ValueError, OverflowError):
        raise CheckpointError(f"{name}: its {source} {tuple(hw) if hw is not None else hw} is not two whole numbers") \
            from None
    if not exact or not (1 <= h <= MAX_SIDE and 1 <= w <= MAX_SIDE):
        shown = "x".join(str(int(v)) if float(v) == int(v) else str(v) for v in hw)
        why = "no memory holds a batch of it" if max(h, w) > MAX_SIDE else "an image has at least one pixel a side"
        raise CheckpointError(f"{name} declares an {source} of {shown}, which bgbench cannot feed ({why}); it "
                              f"feeds images of 1 to {MAX_SIDE} pixels a side")
    return h, w


def native_hw(input_size) -> Tuple[int, int]:
    """(H, W) of a spec's input size, given as (C, H, W), (H, W) or a single side."""
    size = tuple(input_size) if isinstance(input_size, (tuple, list)) else (int(input_size),)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    return int(size[-2]), int(size[-1])


def fit_to_native(x, input_size, interpolation: str = "bilinear"):
    """A (N, C, H, W) [0,1] batch resized to cover `input_size` and centre-cropped to it (policy 'native')."""
    import torch.nn.functional as F
    target = native_hw(input_size)
    if tuple(x.shape[-2:]) == target:
        return x
    h, w = x.shape[-2:]
    scale = max(target[0] / h, target[1] / w)  # the size that covers the target with the aspect kept
    size = max(target[0], round(h * scale)), max(target[1], round(w * scale))
    mode = interpolation if interpolation in INTERPOLATIONS else "bilinear"
    if size != tuple(x.shape[-2:]):
        kwargs = {} if mode == "nearest" else {"align_corners": False, "antialias": True}
        x = F.interpolate(x, size=size, mode=mode, **kwargs).clamp(0, 1)
    top, left = (size[0] - target[0]) // 2, (size[1] - target[1]) // 2
    return x[..., top:top + target[0], left:left + target[1]]


def size_note(name: str, input_size, resize: str, image_hw: Tuple[int, int], random_init: bool = False,
              interpolation: str = "bilinear"):
    """What a run should say about image size vs the model's input size (None: nothing to say).

    With 'native', images of another size are resized (a status line says so, and how); with
    'none', a model whose weights expect another size is fed the images as they are, which is
    worth a warning (a randomly initialised network has no size of its own, so it gets none).
    """
    target = native_hw(input_size)
    image_hw = tuple(int(v) for v in image_hw)
    if image_hw == target:
        return None
    if resize == "native":
        return (f"{name}: resizing {image_hw[0]}x{image_hw[1]} images to its input size {target[0]}x{target[1]} "
                f"({interpolation}, inside the model; --resize none feeds them as they are; recorded in the run)")
    if random_init:
        return None
    return (f"warning: {name} expects {target[0]}x{target[1]} inputs but the images are {image_hw[0]}x{image_hw[1]}; "
            f"they are fed as they are (--resize none); --resize native resizes them")
