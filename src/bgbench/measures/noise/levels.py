"""The noise probe's level grids, by name or explicit numbers.

An overall RFS averages accuracies over a grid's levels, so it compares only within one grid: the
grid travels with every RFS (run config, table, JSON, report).

Where no levels are asked for, the data chooses (`data_grid`): Hard ImageNet's data its own grid,
every other dataset RIVAL10's.

- `rival10`: RIVAL10's `compute_noise_robustness.py`: σ = 30, 60, …, 210 (/255),
  7 levels; L2 norms 25, 50, …, 200, 8 levels (noise over the region, all channels, pixel values
  in [0,1], as RIVAL10's `l2_normalize` of the masked noise; RIVAL10's images are 224 px, so on
  smaller images the same norm is stronger per pixel).
- `hardimagenet`: Hard ImageNet's `rfs.py` (lines 96-97): σ 0.125 … 0.75, 6 levels; L2 30 … 180,
  6 levels.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...errors import BgbenchError

KINDS = ("sigma", "l2")
GRIDS: Dict[str, Dict[str, Tuple[float, ...]]] = {
    "rival10": {"sigma": tuple(k / 255 for k in range(30, 211, 30)), "l2": tuple(float(k) for k in range(25, 201, 25))},
    "hardimagenet": {"sigma": (0.125, 0.25, 0.375, 0.5, 0.625, 0.75), "l2": (30.0, 60.0, 90.0, 120.0, 150.0, 180.0)},
}
CUSTOM = "custom"


def data_grid(data_kind: Optional[str]) -> str:
    """The grid of a run that asked for no levels, on data of layout kind `data_kind`: the grid of
    the protocol that defines the probe there (`common.protocols`), each protocol's grid bearing its
    name; RIVAL10's where the data is not known."""
    from ..common.protocols import protocol_of_kind
    return protocol_of_kind(data_kind)


def resolve_levels(levels, kind: str) -> Tuple[str, List[float]]:
    """(grid name, levels) from a grid name or numbers ('0.5', '30/255')."""
    levels = [levels] if isinstance(levels, str) else list(levels)
    if len(levels) == 1 and isinstance(levels[0], str) and levels[0] in GRIDS:
        return levels[0], list(GRIDS[levels[0]][kind])
    if not levels:
        raise BgbenchError("--levels needs a grid name or at least one noise level")
    values = [_number(v) for v in levels]
    for name, grid in GRIDS.items():  # numbers that spell out a named grid are that grid
        if _same(values, grid[kind]):
            return name, list(grid[kind])
    return CUSTOM, values


def _number(v) -> float:
    if isinstance(v, (int, float)):
        out = float(v)
    else:
        try:
            out = float(Fraction(str(v).strip()))
        except (ValueError, ZeroDivisionError):
            raise BgbenchError(f"--levels: {v!r} is neither a grid ({', '.join(GRIDS)}) nor a number "
                               "(like 0.5 or 30/255)") from None
    if not 0 <= out < float("inf"):  # NaN fails this too
        raise BgbenchError(f"--levels: a noise level must be a finite number of at least 0, got {v}")
    return out


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= 1e-12 * max(1.0, abs(y)) for x, y in zip(a, b))


def level_label(level: float, kind: str, grid: str = CUSTOM) -> str:
    """How a level reads: σ levels on RIVAL10's /255 scale (its grid, and any σ that is a whole
    number of 255ths, such as the demo's 60/255), every other level as a number."""
    steps = level * 255
    if kind == "sigma" and (grid == "rival10" or (0 < steps < 255 and abs(steps - round(steps)) < 1e-6)):
        return f"{round(steps)}/255"
    return f"{level:g}"


def grid_label(name: str, kind: str, levels: Sequence[float]) -> str:
    """'rival10 σ 30/255 … 210/255 (7 levels)': what an overall RFS was averaged over."""
    symbol = "σ" if kind == "sigma" else "L2"
    values = [level_label(v, kind, name) for v in levels]
    span = values[0] if len(values) == 1 else f"{values[0]} … {values[-1]}"
    return f"{name} {symbol} {span} ({len(values)} level{'s' if len(values) != 1 else ''})"
