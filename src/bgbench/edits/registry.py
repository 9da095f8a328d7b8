"""ImageNet-E edit levels registered by name; each writes one folder '<attribute>_<level>'.

Every edit is a pure function with one signature, `render(image, mask, ctx) -> Edited`, where
`ctx` supplies the clean background, the complexity backend and a per-image generator. The
adversarial complexity level needs a classifier and runs batched in the parent (see pipeline).

Pluggable backends, for the two edits that a generative model could do better: an inpainter
makes the clean background x_b; a complexity editor changes a background's complexity at level
lambda. The classical CPU implementations are the defaults ('telea', 'fft').
A user with diffusion or LaMa weights registers their own under a name and picks it with
`bgbench edit --inpainter NAME` / `--complexity-editor NAME`; nothing is downloaded.

    from bgbench.edits import register_inpainter

    @register_inpainter("lama")
    def lama(image, mask):            # HxWx3 uint8, HxW bool -> HxWx3 uint8
        return my_lama_model(image, mask)

A backend that cannot edit an image raises `ValueError` or `RuntimeError` (OpenCV's `cv2.error`
too): that image is rejected at that level and the run goes on. Any other exception is a bug and
stops the run.

Register before calling `edit_dataset` (worker processes are forked and inherit the registry);
from the CLI, `bgbench edit --plugin my_module` imports a module that registers its backends.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Protocol, Sequence

import numpy as np

from . import functions as F
from .complexity import spectrum_edit

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


def _size(rate: Optional[float], image, mask, ctx):
    out, m, matrix, s = F.scale_for_rate(image, mask, ctx.background(), rate)
    return Edited(out, m, {"scale": round(s, 5), "target_rate": rate if rate is not None else "full",
                           "matrix": _fmt(matrix)})


def _position(image, mask, ctx):
    small, m, matrix, s = F.scale_for_rate(image, mask, ctx.background(), POSITION_RATE)
    move = F.random_position(m, ctx.rng)
    # one warp from the source: scale then move, so the object is resampled once
    total = F.compose(move, matrix)
    out, m2 = F.transform_object(image, mask, ctx.background(), total)
    return Edited(out, m2, {"scale": round(s, 5), "dx": float(move[0, 2]), "dy": float(move[1, 2]),
                            "matrix": _fmt(total)})


def _rotation(angle: Optional[float], image, mask, ctx):
    theta = float(ctx.rng.uniform(0, 360)) if angle is None else angle
    matrix = F.rotate(mask, theta)  # DoesNotFit: rejected by the pipeline, never shrunk
    out, m = F.transform_object(image, mask, ctx.background(), matrix)
    return Edited(out, m, {"angle": round(theta, 3), "area_ratio": round(F.area_ratio(mask, m), 5),
                           "matrix": _fmt(matrix)})


def _complexity(lam: float, image, mask, ctx):
    out = np.where(mask[..., None], image, ctx.complexity(image, mask, lam))  # the object is never touched
    return Edited(out, mask.copy(), {"lambda": lam})


def _fmt(matrix: np.ndarray) -> List[float]:
    return [round(float(v), 5) for v in matrix.ravel()]


def _level(x: float) -> str:
    return f"{x:g}"


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
            out += [Edit(f"size_{k}", "size", k, partial(_size, r)) for k, r in SIZE_RATES.items()]
        elif a == "position":
            out.append(Edit("position_random", "position", "random", _position))
        elif a == "rotation":
            # a fixed angle in degrees, or None for a seeded random angle per image
            out += [Edit(f"rotation_{'random' if t is None else _level(t)}", "rotation",
                         "random" if t is None else _level(t), partial(_rotation, t)) for t in (angles or [None])]
        elif a == "complexity":
            out += [Edit(f"complexity_{_level(l)}", "complexity", _level(l), partial(_complexity, l))
                    for l in COMPLEXITY_LAMBDAS]
            if with_model:
                out.append(Edit(ADVERSARIAL, "complexity", "adv", None, needs_model=True))
        else:
            raise ValueError(f"unknown attribute {a!r}; known: {', '.join(ATTRIBUTES)}")
    if levels:
        out = [e for e in out if any(fnmatch.fnmatch(e.name, p) for p in levels)]
    return out


class Inpainter(Protocol):
    def __call__(self, image: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The image with the masked object removed (HxWx3 uint8)."""


class ComplexityEditor(Protocol):
    def __call__(self, image: np.ndarray, mask: np.ndarray, lam: float) -> np.ndarray:
        """The image with its background (outside `mask`) moved to complexity level `lam`.
        The caller copies the object's pixels back, so a backend cannot change them."""


_INPAINTERS: Dict[str, Inpainter] = {}
_COMPLEXITY: Dict[str, ComplexityEditor] = {}


def _register(table: dict, kind: str, name: str) -> Callable:
    def deco(fn):
        if name in table:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = fn
        return fn
    return deco


def register_inpainter(name: str) -> Callable[[Inpainter], Inpainter]:
    """Decorator: register an `Inpainter` under `name`."""
    return _register(_INPAINTERS, "inpainter", name)


def register_complexity_editor(name: str) -> Callable[[ComplexityEditor], ComplexityEditor]:
    """Decorator: register a `ComplexityEditor` under `name`."""
    return _register(_COMPLEXITY, "complexity editor", name)


def _get(table: dict, kind: str, flag: str, name: str):
    from ..errors import BgbenchError
    try:
        return table[name]
    except KeyError:
        raise BgbenchError(f"{flag}: unknown {kind} {name!r}; registered: {', '.join(table)}") from None


def get_inpainter(name: str) -> Inpainter:
    return _get(_INPAINTERS, "inpainter", "--inpainter", name)


def get_complexity_editor(name: str) -> ComplexityEditor:
    return _get(_COMPLEXITY, "complexity editor", "--complexity-editor", name)


def list_inpainters() -> List[str]:
    return list(_INPAINTERS)


def list_complexity_editors() -> List[str]:
    return list(_COMPLEXITY)


register_inpainter("telea")(F.inpaint_telea)
register_complexity_editor("fft")(spectrum_edit)
