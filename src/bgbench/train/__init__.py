"""Training: recipes (erm, mixup, cutmix, background swapping), SWA, resumable runs."""
from .augment import get_recipe, list_recipes, register_recipe, swap_backgrounds
from .loop import TrainConfig, save_checkpoint, train

__all__ = ["TrainConfig", "get_recipe", "list_recipes", "register_recipe", "save_checkpoint", "swap_backgrounds",
           "train"]
