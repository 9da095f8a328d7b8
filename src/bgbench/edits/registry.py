"""ImageNet-E edit levels registered by name; each writes one folder '<attribute>_<level>'.

Every edit is a pure function with one signature, `render(image, mask, ctx) -> Edited`, where
`ctx` supplies the clean background, the complexity backend and a per-image generator. The
adversarial complexity level needs a classifier and runs batched in the parent (see pipeline).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from . import functions as F

ATTRIBUTES = ("remove", "size", "position", "rotation", "complexity")
SIZE_RATES = {"full": None, "0.1": 0.1, "0.08": 0.08, "0.05": 0.05}
POSITION_RATE = 0.05  # the paper moves the 0.05-rate object
COMPLEXITY_LAMBDAS = (-20.0, 20.0)
ADVERSARIAL = "complexity_adv"


@dataclass
class Context:
    """What an edit may use beyond the image and mask (built once per image)."""

    background: Callable[[], np.ndarray]  # the clean background x_b (cached by the caller)
    complexity: Callable[[np.ndarray, np.ndarray, float], np.ndarray]
    rng: np.random.Generator


@dataclass
class Edited:
    image: np.ndarray
    mask: np.ndarray  # the object's mask after the edit (empty for 'remove')
    params: Dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Edit:
    name: str  # output folder
    attribute: str
    level: str
    render: Optional[Callable[[np.ndarray, np.ndarray, Context], Edited]]  # None: runs in the parent
    needs_model: bool = False


def _remove(image, mask, ctx):
    return Edited(ctx.background(), np.zeros_like(mask, dtype=bool))


def _size(rate: Optional[float]):
    def render(image, mask, ctx):
        out, m, matrix, s = F.scale_for_rate(image, mask, ctx.background(), rate)
        return Edited(out, m, {"scale": round(s, 5), "target_rate": rate if rate is not None else "full",
                               "matrix": _fmt(matrix)})
    return render


def _position(image, mask, ctx):
    small, m, matrix, s = F.scale_for_rate(image, mask, ctx.background(), POSITION_RATE)
    move = F.random_position(m, ctx.rng)
    # one warp from the source: scale then move, so the object is resampled once
    total = F.compose(move, matrix)
    out, m2 = F.transform_object(image, mask, ctx.background(), total)
    return Edited(out, m2, {"scale": round(s, 5), "dx": float(move[0, 2]), "dy": float(move[1, 2]),
                            "matrix": _fmt(total)})


def _rotation(angle: Optional[float]):
    def render(image, mask, ctx):
        theta = float(ctx.rng.uniform(0, 360)) if angle is None else angle
        matrix = F.rotate(mask, theta)  # DoesNotFit: rejected by the pipeline, never shrunk
        out, m = F.transform_object(image, mask, ctx.background(), matrix)
        return Edited(out, m, {"angle": round(theta, 3), "area_ratio": round(F.area_ratio(mask, m), 5),
                               "matrix": _fmt(matrix)})
    return render


def _complexity(lam: float):
    def render(image, mask, ctx):
        out = ctx.complexity(image, mask, lam)
        out = np.where(mask[..., None], image, out)  # the object is never touched
        return Edited(out, mask.copy(), {"lambda": lam})
    return render


def _fmt(matrix: np.ndarray) -> List[float]:
    return [round(float(v), 5) for v in matrix.ravel()]


def _level(x: float) -> str:
    return f"{x:g}"


def rotation_edit(angle: Optional[float]) -> Edit:
    """A rotation level: a fixed angle in degrees, or None for a seeded random angle per image."""
    level = "random" if angle is None else _level(angle)
    return Edit(f"rotation_{level}", "rotation", level, _rotation(angle))


def edits_for(attributes: Sequence[str] = ATTRIBUTES, angles: Optional[Sequence[float]] = None,
              levels: Optional[Sequence[str]] = None, with_model: bool = False) -> List[Edit]:
    """The edit levels to run: every level of `attributes`, rotation at `angles` (default: one
    seeded random angle per image), filtered by `levels` (fnmatch patterns on folder names). The
    adversarial level is included only `with_model`."""
    out: List[Edit] = []
    for a in attributes:
        if a == "remove":
            out.append(Edit("remove", "remove", "inpainted", _remove))
        elif a == "size":
            out += [Edit(f"size_{k}", "size", k, _size(r)) for k, r in SIZE_RATES.items()]
        elif a == "position":
            out.append(Edit("position_random", "position", "random", _position))
        elif a == "rotation":
            out += [rotation_edit(t) for t in (angles or [None])]
        elif a == "complexity":
            out += [Edit(f"complexity_{_level(l)}", "complexity", _level(l), _complexity(l))
                    for l in COMPLEXITY_LAMBDAS]
            if with_model:
                out.append(Edit(ADVERSARIAL, "complexity", "adv", None, needs_model=True))
        else:
            raise ValueError(f"unknown attribute {a!r}; known: {', '.join(ATTRIBUTES)}")
    if levels:
        out = [e for e in out if any(fnmatch.fnmatch(e.name, p) for p in levels)]
    return out
