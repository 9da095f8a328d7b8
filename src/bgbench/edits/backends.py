"""Pluggable backends for the two edits that a generative model could do better.

An inpainter makes the clean background x_b; a complexity editor changes a background's
complexity at level lambda. The classical CPU implementations are the defaults ('telea', 'fft').
A user with diffusion or LaMa weights registers their own under a name and picks it with
`bgbench edit --inpainter NAME` / `--complexity-editor NAME`; nothing is downloaded.

    from . import register_inpainter

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

from typing import Callable, Dict, List, Protocol

import numpy as np


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


@register_inpainter("telea")
def _telea(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    from .functions import inpaint_telea
    return inpaint_telea(image, mask)


@register_complexity_editor("fft")
def _fft(image: np.ndarray, mask: np.ndarray, lam: float) -> np.ndarray:
    from .complexity import spectrum_edit
    return spectrum_edit(image, mask, lam)
