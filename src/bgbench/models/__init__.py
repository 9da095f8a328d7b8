"""Model specs, the model registry and checkpoint loading."""
from .registry import NORMS, create_model, list_models, register_zoo
from .spec import BgModel, ModelSpec

__all__ = ["BgModel", "ModelSpec", "NORMS", "create_model", "list_models", "register_zoo"]
