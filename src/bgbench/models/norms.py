"""Normalization constants and the rule that picks them (no torch: the CLI's choices come from here).

A model's mean and std come from the model itself where it says them (a timm tag's config, a
bgbench checkpoint's spec, a robustness normalizer, an ONNX file's metadata), else from a flag
(`--mean/--std`, `--norm`). A file that says nothing gets the rule's guess by label space, and the
guess is never silent: the scheme marks it (`mark_assumed`), `models.options.build` says it on
stderr in one line with the flag that overrides it, and the run records where the numbers came
from (`spec.extra['normalization']`): the wrong mean can halve a BG-Gap without a word otherwise.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..classes import DATASET, IMAGENET1K  # noqa: F401 (the label spaces, read here by the schemes)
from ..errors import BgbenchError

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
