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
from ._lazy import lazy_getattr as _lazy_getattr
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
__getattr__ = _lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list:
    return sorted({*globals(), *_EXPORTS})
