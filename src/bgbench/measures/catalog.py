"""The catalog: the measure packages, in the order commands and reports list them.

Adding a measure is its package under `measures/` plus one line here. Importing a package runs
its declaration (light: no torch), which registers it.
"""
from __future__ import annotations

import importlib
from typing import Tuple

PACKAGES: Tuple[str, ...] = (
    "eval", "challenge",
    "categories", "boxsize", "leakage", "edits", "groups", "shortcuts",
    "noise", "saliency", "features", "ablate", "attribution",
    "watermark", "texture", "renditions", "imagenet_x",
)


def load_all() -> None:
    """Import every catalogued measure package (each registers itself once)."""
    for name in PACKAGES:
        importlib.import_module(f"{__package__}.{name}")
