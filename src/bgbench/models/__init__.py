"""Model specs, the model schemes (timm:, file:, zoo:) and checkpoints, read and written.

The scheme registry is torch-free; the specs, schemes and checkpoints load on first use (they need torch).
"""
from .._lazy import lazy_getattr
from .norms import NORMS
from .schemes import ModelRequest, register_scheme

_EXPORTS = {"BgModel": ".spec", "ModelSpec": ".spec", "create_model": ".registry", "list_models": ".registry",
            "list_schemes": ".registry", "register_zoo": ".zoo", "read_checkpoint": ".checkpoint",
            "save_checkpoint": ".checkpoint"}
__all__ = ["NORMS", "ModelRequest", "register_scheme", *_EXPORTS]
__getattr__ = lazy_getattr(__name__, _EXPORTS)
