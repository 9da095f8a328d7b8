"""bgbench: measure, and reduce, how much an image classifier relies on image backgrounds.

The public API is one plain function per job (see `__all__`): each computes and returns a
result with its `provenance`; `record(result, store)` writes it to a results store. The names
load lazily, so that `import bgbench` and `bgbench --help` stay cheap: torch and timm load only
when a model or an evaluation is asked for. No module or subpackage shares a name with these
functions, so `bgbench.evaluate` is the function whatever has been imported.
"""
from __future__ import annotations

import importlib
from typing import List

from .version import __version__

#: public name -> the module that defines it
_EXPORTS = {
    **{name: ".api" for name in (
        "evaluate", "evaluate_predictions", "export_predictions", "export_scorecard", "predict", "challenge", "probe",
        "train",
        "synth", "build", "edit",
        "prediction_categories", "box_size", "leakage", "edit_drops", "worst_group", "shortcut_table", "compare",
        "report", "leaderboard")},
    "create_model": ".models.registry", "list_models": ".models.registry",
    "list_variants": ".variants.registry",
    "record": ".recording",
    "study": ".studies",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    """Resolve a public name on first use and keep it, so later lookups skip this function."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted({*globals(), *_EXPORTS})
