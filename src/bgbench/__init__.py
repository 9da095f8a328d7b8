"""bgbench: measure, and reduce, how much an image classifier relies on image backgrounds.

The public API is one plain function per job (see `__all__`), whose keyword options are its
config's fields with the config's defaults: each computes and returns a result with its
`provenance`; `record(result, store)` writes it to a results store. The names
load lazily, so that `import bgbench` and `bgbench --help` stay cheap: torch and timm load only
when a model or an evaluation is asked for. No module or subpackage shares a name with these
functions, so `bgbench.evaluate` is the function whatever has been imported.
"""
from __future__ import annotations

import importlib
from typing import List

from .version import __version__

#: public name -> the module that defines it: the few functions a user needs, one per job (`__all__`;
#: docs/reference/python.md lists them).
_EXPORTS = {
    **{name: ".api" for name in (
        "evaluate", "probe", "analyze", "compare", "challenge", "predict", "train", "synth", "build", "edit",
        "report")},
    "create_model": ".models.registry", "list_models": ".models.registry",
    "record": ".recording",
    "study": ".studies",
}
#: Names that resolve as `bgbench.NAME` without being listed: each is importable from its module,
#: and `analyze` reaches every analysis by name.
_ALSO = {
    **{name: ".api" for name in (
        "prediction_categories", "box_size", "leakage", "edit_drops", "worst_group", "shortcut_table",
        "evaluate_predictions", "export_predictions", "export_scorecard", "leaderboard")},
    "list_variants": ".variants.registry",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    """Resolve a public name on first use and keep it, so later lookups skip this function."""
    if name == "api":  # the module behind the functions: `bgbench.api.noise`, a probe's own function
        return importlib.import_module(".api", __name__)
    module = _EXPORTS.get(name) or _ALSO.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    if name in _EXPORTS:
        globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted({*globals(), *_EXPORTS})
