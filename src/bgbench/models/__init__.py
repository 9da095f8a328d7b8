"""Model specs, the model registry and checkpoint loading (loaded on first use: they need torch)."""
from .._lazy import lazy_getattr
from .norms import NORMS

_EXPORTS = {"BgModel": ".spec", "ModelSpec": ".spec", "create_model": ".registry", "list_models": ".registry",
            "register_zoo": ".zoo"}
__all__ = ["NORMS", *_EXPORTS]
__getattr__ = lazy_getattr(__name__, _EXPORTS)
