"""Validation shared by every config dataclass (`__post_init__`), so the API and the CLI refuse
the same bad values with the same one-line `BgbenchError`."""
from __future__ import annotations

from typing import Optional, Sequence

from .errors import BgbenchError


def _nan(name: str, value) -> None:
    if value is not None and value != value:  # NaN compares false with everything: refuse it by name
        raise BgbenchError(f"{name} must be a number, got nan")


def at_least(name: str, value: Optional[float], low: float) -> None:
    _nan(name, value)
    if value is not None and value < low:
        raise BgbenchError(f"{name} must be at least {low:g}, got {value:g}")


def within(name: str, value: Optional[float], low: float, high: float, open_low: bool = False,
           open_high: bool = False) -> None:
    """low <= value <= high (or strict at an open end); None passes."""
    _nan(name, value)
    if value is not None and ((value <= low if open_low else value < low)
                              or (value >= high if open_high else value > high)):
        lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
        raise BgbenchError(f"{name} must be in {lo}{low:g}, {high:g}{hi}, got {value:g}")


def one_of(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise BgbenchError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def member(name: str, value, enum: type):
    """`value` (a member or its string) as a member of `enum`: a closed set of names converted once,
    where a config is built; anything else is one line naming the choices."""
    try:
        return enum(value)
    except ValueError:
        raise BgbenchError(f"{name} must be one of {', '.join(m.value for m in enum)}, got {value!r}") from None


def device(name: str) -> str:
    """A torch device string that exists on this machine (cuda only where CUDA is available)."""
    import torch
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError):
        raise BgbenchError(f"unknown device {name!r}; use cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise BgbenchError(f"--device {name}: CUDA is not available on this machine; use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise BgbenchError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type not in ("cpu", "mps"):
        raise BgbenchError(f"unsupported device {name!r}; use cpu or cuda")
    return name
