"""Lazy package exports (PEP 562): a package names its public objects without importing the
modules that define them, so that importing a light submodule never drags in torch."""
from __future__ import annotations

import importlib
from typing import Callable, Dict


def lazy_getattr(package: str, exports: Dict[str, str]) -> Callable[[str], object]:
    """A module-level `__getattr__` resolving `exports[name]` ('.module' relative to `package`)."""
    def __getattr__(name: str):
        if name in exports:
            return getattr(importlib.import_module(exports[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
