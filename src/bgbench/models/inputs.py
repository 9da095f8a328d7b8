"""How an image meets a model: its normalization and its input size, both recorded in the model's spec.

A model's mean and std come from the model itself where it says them (a timm tag's config, a
bgbench checkpoint's spec, a robustness normalizer, an ONNX file's metadata), else from a flag
(`--mean/--std`, `--norm`). A file that says nothing gets the rule's guess by label space, and the
guess is never silent: the scheme marks it (`mark_assumed`), `models.options.build` says it on
stderr in one line with the flag that overrides it, and the run records where the numbers came
from (`spec.extra['normalization']`): the wrong mean can halve a BG-Gap without a word otherwise.

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
job sees the same model. No torch here: the CLI's choices come from these constants.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..classes import DATASET, IMAGENET1K  # noqa: F401 (the label spaces, read here by the schemes)
from ..errors import BgbenchError, CheckpointError

IN9_MEAN = (0.4717, 0.4499, 0.3837)
IN9_STD = (0.2600, 0.2516, 0.2575)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

NORMS = ("auto", "in9", "imagenet", "none")


def norm_for(norm: str, num_classes: int, timm_cfg: Optional[dict] = None) -> Tuple[tuple, tuple]:
    """(mean, std) for `--norm`: 'auto' uses the model's own config for 1000-class models, IN-9's otherwise."""
    if norm == "none":
        return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    if norm == "in9":
        return IN9_MEAN, IN9_STD
    if norm == "imagenet" or num_classes == 1000:
        if norm == "auto" and timm_cfg and timm_cfg.get("mean") and len(timm_cfg["mean"]) == 3:
            return tuple(timm_cfg["mean"]), tuple(timm_cfg["std"])
        return IMAGENET_MEAN, IMAGENET_STD
    return IN9_MEAN, IN9_STD


#: Where a model's mean and std came from, as `spec.extra['normalization']['source']` records it.
FROM_MODEL, ASSUMED, FROM_FLAGS = "model", "assumed", "flags"


def mark_assumed(spec, why: str) -> None:
    """Record on `spec` that its mean and std are the rule's guess, not the model's own (`why`:
    what the model lacked, e.g. 'its ONNX metadata has no mean/std')."""
    spec.extra["normalization"] = {"source": ASSUMED, "why": why}


def record_norm(spec, norm: str, mean, std) -> None:
    """Apply `--mean/--std` (or a `--norm` other than auto) to `spec` and record where its mean and
    std came from in `spec.extra['normalization']` ({source, mean, std[, why, flag]})."""
    previous = dict((spec.extra or {}).get("normalization") or {})
    if mean is not None:
        spec.mean, spec.std = tuple(float(v) for v in mean), tuple(float(v) for v in std)
        record = {"source": FROM_FLAGS, "flag": "--mean/--std"}
    elif norm != "auto":
        spec.mean, spec.std = norm_for(norm, spec.num_classes)
        record = {"source": FROM_FLAGS, "flag": f"--norm {norm}"}
    else:
        record = previous if previous.get("source") == ASSUMED else {"source": FROM_MODEL}
    record.update(mean=[float(v) for v in spec.mean], std=[float(v) for v in spec.std])
    spec.extra["normalization"] = record


def assumed_note(spec) -> Optional[str]:
    """The one warning line for a model whose mean and std were guessed (None: the model or a flag
    gave them, or its weights are a random init, which has no preprocessing of its own)."""
    record = (spec.extra or {}).get("normalization") or {}
    if record.get("source") != ASSUMED or "init_seed" in (spec.extra or {}):
        return None
    which = ("ImageNet's" if tuple(spec.mean) == IMAGENET_MEAN else "IN-9's" if tuple(spec.mean) == IN9_MEAN
             else "the")
    return (f"warning: {spec.name}: {record.get('why') or 'it does not say its normalization'}; assuming "
            f"{which} mean {_triple(spec.mean)} and std {_triple(spec.std)} ({spec.num_classes} outputs); if it "
            f"was trained otherwise give --mean R,G,B --std R,G,B (or --norm in9|imagenet|none); recorded in the run")


def _triple(values) -> str:
    return "(" + ", ".join(f"{float(v):g}" for v in values) + ")"


def parse_triple(value, name: str) -> Optional[Tuple[float, float, float]]:
    """Three finite numbers from `--mean`/`--std` ('0.5,0.5,0.5', '0.5 0.5 0.5') or a study's list;
    None stays None; anything else is one line naming the flag."""
    import math
    if value is None:
        return None
    parts: Sequence = value.replace(",", " ").split() if isinstance(value, str) else value
    try:
        numbers = tuple(float(v) for v in parts)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != 3 or not all(math.isfinite(v) for v in numbers):
        raise BgbenchError(f"{name} takes three numbers for the R, G and B channels of [0,1] images "
                           f"(e.g. 0.5,0.5,0.5), got {value!r}")
    return numbers


def check_norm_flags(norm: str, mean, std) -> None:
    """`--mean` and `--std` come together, with positive stds, and not beside a `--norm` that names
    other numbers: one line each."""
    if (mean is None) != (std is None):
        raise BgbenchError("--mean and --std go together: give both (three numbers each, for [0,1] images)")
    if std is not None and min(std) <= 0:
        raise BgbenchError(f"--std must be positive, got {','.join(f'{v:g}' for v in std)}")
    if mean is not None and norm != "auto":
        raise BgbenchError(f"--mean/--std and --norm {norm} both set the normalization; give one")


def parse_size(value, name: str = "--input-size") -> Optional[Tuple[int, int]]:
    """(H, W) from '224', '224x192', '224,192' or a study's number or list; None stays None."""
    if value is None:
        return None
    parts = value.lower().replace("x", " ").replace(",", " ").split() if isinstance(value, str) else \
        (list(value) if isinstance(value, (list, tuple)) else [value])
    try:
        sides = [int(str(v)) for v in parts]
    except ValueError:
        sides = []
    if len(sides) == 1:
        sides *= 2
    if len(sides) != 2 or min(sides) < 1:
        raise BgbenchError(f"{name} takes a side or HxW in pixels (e.g. 224 or 224x224), got {value!r}")
    return sides[0], sides[1]


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
