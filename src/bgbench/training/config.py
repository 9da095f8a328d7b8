"""The training configuration, free of torch so that the CLI reads its defaults at `--help` time."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Tuple

from .. import checks
from ..errors import BgbenchError
from ..models.options import ModelOptions
from .recipes import (DEFAULT_BGSWAP_P, DEFAULT_CUTMIX_ALPHA, DEFAULT_MIXUP_ALPHA, DEFAULT_SWA_START, last_layer_recipes,
                      list_recipes)


@dataclass
class TrainConfig:
    """Everything that defines a training run (saved as OUT/config.json).

    Attributes:
        recipe: a name from `augment.list_recipes()` ('erm' is plain training).
        bgswap_p: probability that bgswap swaps an image's background.
        mixup_alpha, cutmix_alpha: Beta parameters of the 'mixup' and 'cutmix' recipes.
        swa: average the weights of the last epochs (see `swa.py`); the saved model is the average.
        swa_start: share of the epochs trained before averaging starts.
        swa_lr: constant learning rate during averaging (default: lr / 4).
        init: fine-tune from this checkpoint (a path for `model`'s architecture, or a model string
            such as 'zoo:efficientnet_lite0'); the head is replaced by one with the dataset's classes.
        freeze: train the classifier head only.
        device: where the model trains ('cpu', 'cuda'); under torchrun on CUDA each process takes
            the GPU of its LOCAL_RANK.
        sync_bn: under torchrun on GPUs, SyncBatchNorm (batch statistics over all processes'
            images); without it each process normalizes with its own share of the batch.
    """

    data: str
    variant: str = "original"
    model: str = "timm:resnet10t"
    out: str = "runs/train"
    split: str = "train"
    epochs: int = 10
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 0.05
    seed: int = 0
    threads: Optional[int] = None
    recipe: str = "erm"
    bgswap_p: float = DEFAULT_BGSWAP_P
    mixup_alpha: float = DEFAULT_MIXUP_ALPHA
    cutmix_alpha: float = DEFAULT_CUTMIX_ALPHA
    swa: bool = False
    swa_start: float = DEFAULT_SWA_START
    swa_lr: Optional[float] = None
    init: Optional[str] = None
    freeze: bool = False
    device: str = "cpu"
    sync_bn: bool = False

    def __post_init__(self):
        checks.at_least("--epochs", self.epochs, 1)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.within("--lr", self.lr, 0, 10, open_low=True)
        checks.at_least("weight decay", self.weight_decay, 0)
        checks.at_least("--threads", self.threads, 1)
        checks.one_of("--recipe", self.recipe, list_recipes())
        if self.recipe in last_layer_recipes():
            raise BgbenchError(f"--recipe {self.recipe} fits a head on a frozen model: it takes a LastLayerConfig "
                               f"(bgbench.train routes it)")
        checks.within("--bgswap-p", self.bgswap_p, 0, 1)
        checks.at_least("--mixup-alpha", self.mixup_alpha, 0)
        checks.at_least("--cutmix-alpha", self.cutmix_alpha, 0)
        checks.within("--swa-start", self.swa_start, 0, 1, open_high=True)
        checks.within("--swa-lr", self.swa_lr, 0, 10, open_low=True)
        checks.device(self.device)
        if self.freeze and not self.init:
            raise BgbenchError("--freeze trains only the head of a pretrained network: it needs --init CKPT")


#: DFR's grid of inverse regularization strengths (the paper's code's C_OPTIONS).
DFR_C_GRID: Tuple[float, ...] = (1.0, 0.7, 0.3, 0.1, 0.07, 0.03, 0.01)
#: Group-balanced subsets whose heads DFR averages (the paper's code: 20 on Waterbirds' validation
#: set; 10 here, half the cost of the final fit).
DFR_RETRAINS = 10


@dataclass(kw_only=True)
class LastLayerConfig(ModelOptions):
    """A last-layer retraining run (`--recipe dfr` or `linear-probe`), saved as OUT/config.json.

    The frozen model is asked for as every command asks for one: this config is a
    `models.options.ModelOptions` (model, checkpoint, pretrained, norm, resize, ...), so a model
    option added there reaches DFR too.

    Attributes:
        variant: the images the head is fitted on; None: MIXED-RAND for DFR on IN-9-layout data
            (where the background no longer predicts the class), ORIGINAL otherwise.
        split: the split read; None: train, or every row of a groups.csv without a split column
            (DFR's Waterbirds results fit the head on the validation split: 'val').
        c_grid: inverse regularization strengths tried; penalty: 'l1' (DFR's) or 'l2'.
        held_out: share of each group held out to choose C.
        retrains: group-balanced subsets whose heads are averaged (DFR).
        feature_cache: folder of the cached features (default $BGBENCH_CACHE/features or
            ~/.cache/bgbench/features); 'none' caches nothing.
    """

    data: str
    out: str
    model: str
    recipe: str = "dfr"
    variant: Optional[str] = None
    split: Optional[str] = None
    c_grid: Tuple[float, ...] = DFR_C_GRID
    penalty: str = "l1"
    held_out: float = 0.5
    retrains: int = DFR_RETRAINS
    seed: int = 0
    batch_size: int = 64
    device: str = "cpu"
    feature_cache: Optional[str] = None

    def model_options(self, split: Optional[str]) -> ModelOptions:
        """The frozen model's options (its data: the split the head is fitted on)."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(ModelOptions)}
        return ModelOptions(**{**own, "data": self.data, "split": split})

    def __post_init__(self):
        checks.one_of("--recipe", self.recipe, last_layer_recipes())
        checks.one_of("--penalty", self.penalty, ("l1", "l2"))
        checks.within("--held-out", self.held_out, 0, 1, open_low=True, open_high=True)
        checks.at_least("--retrains", self.retrains, 1)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.device(self.device)
        self.c_grid = tuple(float(c) for c in self.c_grid)
        if not self.c_grid or min(self.c_grid) <= 0:
            raise BgbenchError("--c-grid takes positive inverse regularization strengths, e.g. 1 0.3 0.1")
