"""bgbench: measure, and reduce, how much an image classifier relies on image backgrounds.

The public API loads lazily, so that `import bgbench` and `bgbench --help` stay cheap: torch and
timm load only when a model or an evaluation is asked for.
"""
from ._lazy import lazy_getattr
from .version import __version__

_EXPORTS = {"create_model": ".models.registry", "list_models": ".models.registry", "load_model": ".api",
            "evaluate": ".api", "list_variants": ".variants.registry"}
__all__ = ["__version__", *_EXPORTS]
__getattr__ = lazy_getattr(__name__, _EXPORTS)
