"""The recipe registry and training defaults, free of torch so that the CLI's choices are cheap.

A recipe names a builder, `build(cfg, data, generator) -> BatchAugment` (the run's `TrainConfig`,
its `loop.TrainingData`, the generator of the augmentations' draws), given as a callable or as a
'module:function' string that is imported only when training starts.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Dict, List, Union

from ..errors import BgbenchError

#: Default probability that bgswap replaces a training image's background. Below 1 so that the
#: model still sees some foregrounds in their own context (clean ORIGINAL accuracy stays high);
#: the paper's MIXED-RAND training set corresponds to 1.0.
DEFAULT_BGSWAP_P = 0.8
#: timm/DeiT defaults for the Beta(alpha, alpha) mixing distributions.
DEFAULT_MIXUP_ALPHA = 0.8
DEFAULT_CUTMIX_ALPHA = 1.0
#: Share of the epochs trained before SWA starts averaging (the SWA paper's 75%).
DEFAULT_SWA_START = 0.75


@dataclass(frozen=True)
class Recipe:
    """A named training recipe.

    Attributes:
        build: `build(cfg, data, generator) -> BatchAugment`, or its 'module:function' path.
        needs_masks: the recipe composites foregrounds, so it needs `fg_mask/` for the split.
        last_layer: the recipe keeps a trained network frozen and fits its last layer only
            (`training.last_layer`); `build` is then unused.
    """

    name: str
    help: str
    build: Union[Callable, str]
    needs_masks: bool = False
    last_layer: bool = False

    def builder(self) -> Callable:
        if callable(self.build):
            return self.build
        module, _, fn = self.build.partition(":")
        return getattr(importlib.import_module(module), fn)


_RECIPES: Dict[str, Recipe] = {}


def register_recipe(recipe: Recipe) -> Recipe:
    _RECIPES[recipe.name] = recipe
    return recipe


def list_recipes() -> List[str]:
    """Names of the registered recipes, in registration order."""
    return list(_RECIPES)


def get_recipe(name: str) -> Recipe:
    if name not in _RECIPES:
        raise BgbenchError(f"unknown recipe {name!r}; choose from {', '.join(_RECIPES)}")
    return _RECIPES[name]


_AUG = "bgbench.training.augment"
register_recipe(Recipe("erm", "plain empirical risk minimisation", f"{_AUG}:build_erm"))
register_recipe(Recipe("mixup", "timm Mixup (mixup_alpha), soft-target cross-entropy", f"{_AUG}:build_mixup"))
register_recipe(Recipe("cutmix", "timm Mixup (cutmix_alpha), soft-target cross-entropy", f"{_AUG}:build_cutmix"))
register_recipe(Recipe("bgswap", "on-the-fly MIXED-RAND background swapping (needs fg_mask)",
                       f"{_AUG}:build_bgswap", needs_masks=True))
_LAST = "bgbench.training.last_layer:fit_last_layer"
register_recipe(Recipe("dfr", "last-layer retraining (DFR): a logistic-regression head on the frozen model's "
                              "penultimate features, group-balanced, C chosen by held-out worst-group accuracy",
                       _LAST, last_layer=True))
register_recipe(Recipe("linear-probe", "the same head without group balancing, C chosen by held-out accuracy",
                       _LAST, last_layer=True))


def last_layer_recipes() -> List[str]:
    return [name for name, r in _RECIPES.items() if r.last_layer]
