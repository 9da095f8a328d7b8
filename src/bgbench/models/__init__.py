"""Model specs, the model schemes (timm:, file:, zoo:) and checkpoints, read and written.

The model door and its scheme registry (`options`) are torch-free; the specs, schemes and checkpoints
load on first use (they need torch).
"""
from .._lazy import lazy_getattr
from .inputs import NORMS
from .options import ModelRequest, create_model, list_models, list_schemes, register_scheme

_EXPORTS = {"BgModel": ".spec", "ModelSpec": ".spec", "register_zoo": ".zoo", "read_checkpoint": ".checkpoint",
            "save_checkpoint": ".checkpoint"}
__all__ = ["NORMS", "ModelRequest", "create_model", "list_models", "list_schemes", "register_scheme", *_EXPORTS]
__getattr__ = lazy_getattr(__name__, _EXPORTS)
