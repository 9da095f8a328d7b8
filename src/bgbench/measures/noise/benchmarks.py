"""Noise's headlines on Hard ImageNet's data: beside the overall RFS, the RFS of each level of the
run's grid, as Hard ImageNet's `rfs.py` reports one per noise level."""

from typing import Optional, Tuple

from ..registry import Headline
from .levels import level_label


def rfs_per_level(config: Optional[dict]) -> Tuple[Headline, ...]:
    """One headline per level of a stored noise run's config (none without a run)."""
    if config is None:
        return ()
    kind, grid = config.get("kind", "sigma"), config.get("grid") or "custom"
    symbol = "σ" if kind == "sigma" else "L2"
    return tuple(Headline("rfs", f"{float(level):g}",
                          label=f"Hard ImageNet: RFS at noise {symbol} {level_label(float(level), kind, grid)} "
                                f"(rfs.py; > 0: foreground noise hurts more)",
                          short=f"RFS {symbol} {level_label(float(level), kind, grid)}")
                 for level in config.get("levels") or [])
