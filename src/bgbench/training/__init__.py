"""Training: recipes (erm, mixup, cutmix, background swapping), SWA, resumable runs.

The recipe registry is torch-free; the loop and augmentations load on first use.
"""
from .._lazy import lazy_getattr
from .recipes import Recipe, get_recipe, list_recipes, register_recipe

_EXPORTS = {"TrainConfig": ".config", "train": ".loop", "swap_backgrounds": ".augment"}
__all__ = ["Recipe", "get_recipe", "list_recipes", "register_recipe", *_EXPORTS]
__getattr__ = lazy_getattr(__name__, _EXPORTS)
