"""The catalog: the measure packages, found by scanning `measures/` (no list to edit).

A measure is its package under `measures/` alone: every package on `bgbench.measures`'s path is
imported when the registry is first read, and importing one runs its declaration (light: no
torch), which registers it. A package that declares no measure (`common/`) registers nothing. The
order commands and reports list the measures in is each measure's own `position`
(`registry.list_measures`), never the order of this scan.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, Tuple

_SCANNED: Dict[Tuple[str, ...], Tuple[str, ...]] = {}


def packages() -> Tuple[str, ...]:
    """The packages under `measures/` by name, sorted (`bgbench.measures.__path__` read afresh, so a
    folder added to it, as a test adds a toy measure's, is found; each path is listed once)."""
    from . import __path__ as roots
    key = tuple(roots)
    if key not in _SCANNED:
        _SCANNED[key] = tuple(sorted(info.name for info in pkgutil.iter_modules(list(roots))
                                     if info.ispkg and not info.name.startswith("_")))
    return _SCANNED[key]


def load_all() -> None:
    """Import every measure package (each registers itself once; an imported one costs nothing)."""
    for name in packages():
        importlib.import_module(f"{__package__}.{name}")
