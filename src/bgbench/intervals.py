"""How an interval is written, in every table and on the page, and a missing number in JSON.

A bootstrap over four images, or over images that all agree, can give an interval of zero width:
`BG-Gap 0.0% [0.0%, 0.0%]` reads as an exact value when it is the opposite, too few images to
measure any spread. Such an interval is written with a mark and its n (`[degenerate, n=4]`),
never as two equal bounds.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

#: Replicates of every bootstrap interval (BG-Gap, comparisons, edit drops, the probes), unless a run
#: asks for others; recorded with the seed in each run's config.
REPLICATES = 2000

#: What a zero-width interval is written as (with its n).
DEGENERATE = "degenerate"


def degenerate(lo: Optional[float], hi: Optional[float]) -> bool:
    """An interval of zero width: its resampling found no spread, which is not certainty."""
    return lo is not None and hi is not None and abs(hi - lo) <= 1e-12


def interval(lo: Optional[float], hi: Optional[float], n: Optional[int], fmt: Callable[[float], str],
             sep: str = ", ") -> str:
    """'[lo, hi]' with `fmt` for each bound; '[degenerate, n=4]' for a zero-width one; '' without bounds."""
    if lo is None or hi is None:
        return ""
    if degenerate(lo, hi):
        return f"[{DEGENERATE}, n={n if n is not None else '?'}]"
    return f"[{unsigned_zero(fmt, lo)}{sep}{unsigned_zero(fmt, hi)}]"


def unsigned_zero(fmt: Callable[[float], str], value: float) -> str:
    """`fmt(value)`, except that a value that rounds to zero is written as zero is ('0.0%', '+0.000'),
    never '-0.0%': a minus sign on a rounded zero claims a direction the number does not have."""
    text = fmt(value)
    if text.lstrip().startswith("-") and not any(c in "123456789" for c in text):
        return fmt(0.0)
    return text


def finite_or_none(value: Any) -> Any:
    """`value` with every NaN or infinite float made None, inside dicts, lists and tuples too (tuples
    become lists, numpy scalars and arrays Python's): what strict JSON can hold."""
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return finite_or_none(value.tolist())
    return value
