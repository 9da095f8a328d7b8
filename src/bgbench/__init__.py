"""bgbench: measure, and reduce, how much an image classifier relies on image backgrounds.

The public API is twelve plain functions, one per job (`__all__`; docs/reference/python.md lists
them with their signatures). Each takes `(model, data, **options)`, its keyword options being its
config's fields with the config's defaults, and returns a `result.Result` with its `provenance`;
`record(result, store)` writes it to a results store. The names load lazily, so that `import
bgbench` and `bgbench --help` stay cheap: torch and timm load only when a model or an evaluation
is asked for. No module or subpackage shares a name with these functions, so `bgbench.evaluate`
is the function whatever has been imported; no other public name resolves here but the
submodules and `__version__` (which `__all__` leaves out, as torch's does: it is the package's
metadata, not a function to import).
"""
import importlib as _importlib

from .version import __version__  # noqa: F401 (module metadata, beside `__all__` as in torch)

#: public name -> the module that defines it.
_EXPORTS = {
    "load_model": ".models.options",
    **{name: ".api" for name in (
        "evaluate", "probe", "analyze", "compare", "challenge", "predict", "train", "build", "report")},
    "study": ".studies",
    "record": ".recording",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    """Resolve a public name on first use and keep it, so later lookups skip this function."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted({*globals(), *_EXPORTS})
