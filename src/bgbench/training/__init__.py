"""Training: recipes (erm, mixup, cutmix, background swapping), SWA, resumable runs, and last-layer
retraining (dfr, linear-probe) of a frozen model.

The recipe registry is torch-free; the loop and augmentations load on first use.
"""
from .._lazy import lazy_getattr
from .recipes import Recipe, get_recipe, last_layer_recipes, list_recipes, register_recipe

_EXPORTS = {"TrainConfig": ".config", "LastLayerConfig": ".config", "train": ".loop",
            "fit_last_layer": ".last_layer", "swap_backgrounds": ".augment"}
__all__ = ["Recipe", "get_recipe", "last_layer_recipes", "list_recipes", "register_recipe", *_EXPORTS]
__getattr__ = lazy_getattr(__name__, _EXPORTS)
