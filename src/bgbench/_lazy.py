"""Lazy package exports (PEP 562): a package names its public objects without importing the
modules that define them, so that importing a light submodule never drags in torch."""
from __future__ import annotations

import importlib
import sys
from typing import Callable, Dict


def lazy_getattr(package: str, exports: Dict[str, str]) -> Callable[[str], object]:
    """A module-level `__getattr__` resolving `exports[name]` ('.module' relative to `package`) on
    first use and keeping it in the package, so that later lookups skip this function."""
    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        setattr(sys.modules[package], name, value)
        return value
    return __getattr__
