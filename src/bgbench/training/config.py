"""The training configuration, free of torch so that the CLI reads its defaults at `--help` time."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Tuple

from .. import checks
from ..errors import BgbenchError
from ..models.options import MODEL_HELP, ModelOptions
from ..options import DEVICE_HELP, flag
from ..variants.registry import list_variants
from .recipes import (DEFAULT_BGSWAP_P, DEFAULT_CUTMIX_ALPHA, DEFAULT_MIXUP_ALPHA, DEFAULT_SWA_START, last_layer_recipes,
                      list_recipes)


@dataclass
class TrainConfig:
    """Everything that defines a training run (saved as OUT/config.json).

    Attributes:
        recipe: a name from `augment.list_recipes()` ('erm' is plain training).
        bgswap_p: probability that bgswap swaps an image's background.
        mixup_alpha, cutmix_alpha: Beta parameters of the 'mixup' and 'cutmix' recipes.
        swa: average the weights of the last epochs (see `loop.py`); the saved model is the average.
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

    data: str = field(metadata=flag(
        "--data", "dataset root in the IN-9 layout (the last-layer recipes also read group datasets: Waterbirds' "
        "metadata.csv, a groups.csv)", required=True))
    variant: str = field(default="original", metadata=flag(
        "--variant", "variant folder to train on (default original; dfr: mixed_rand on IN-9-layout data, where the "
        "background no longer predicts the class)", choices=list_variants(), default=None))
    model: str = field(default="timm:resnet10t", metadata=flag(
        "--model", f"timm:ARCH (default timm:resnet10t); the last-layer recipes: {MODEL_HELP}", default=None))
    out: str = field(default="runs/train", metadata=flag(
        "--out", "run folder: model.pt, config.json, log.jsonl, last.pt", required=True))
    split: str = field(default="train", metadata=flag(
        "--split", "split to train on (default: train; a groups.csv without a split column: all its rows; DFR's "
        "Waterbirds results fit the head on --split val)", default=None, type=str))
    epochs: int = field(default=10, metadata=flag("--epochs", "epochs (default %(default)s)"))
    batch_size: int = field(default=64, metadata=flag(
        "--batch-size", "images per training step (under torchrun: of all processes together, a multiple of their "
        "number) (default %(default)s)"))
    lr: float = field(default=2e-3, metadata=flag(
        "--lr", "peak learning rate of the one-cycle schedule, AdamW (default %(default)s)"))
    weight_decay: float = 0.05
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the initialization, the order of images and the augmentations (default %(default)s)"))
    threads: Optional[int] = field(default=None, metadata=flag(
        "--threads", "torch CPU threads (default: torch's choice)", type=int))
    recipe: str = field(default="erm", metadata=flag(
        "--recipe", "erm: plain; mixup/cutmix: timm Mixup; bgswap: on-the-fly MIXED-RAND (needs fg_mask); dfr: "
        "last-layer retraining (Kirichenko et al. 2023), a group-balanced logistic-regression head on the frozen "
        "model's penultimate features; linear-probe: the same unbalanced (default %(default)s)",
        choices=list_recipes()))
    bgswap_p: float = field(default=DEFAULT_BGSWAP_P, metadata=flag(
        "--bgswap-p", "bgswap: probability that an image's background is swapped (default %(default)s)"))
    mixup_alpha: float = field(default=DEFAULT_MIXUP_ALPHA, metadata=flag(
        "--mixup-alpha", "mixup: Beta(a, a) (default %(default)s)"))
    cutmix_alpha: float = field(default=DEFAULT_CUTMIX_ALPHA, metadata=flag(
        "--cutmix-alpha", "cutmix: Beta(a, a) (default %(default)s)"))
    swa: bool = field(default=False, metadata=flag(
        "--swa", "stochastic weight averaging over the last epochs; the saved model is the average",
        action="boolean_optional"))
    swa_start: float = field(default=DEFAULT_SWA_START, metadata=flag(
        "--swa-start", "share of epochs before averaging starts (default %(default)s)"))
    swa_lr: Optional[float] = field(default=None, metadata=flag(
        "--swa-lr", "constant lr while averaging (default lr/4)", type=float))
    init: Optional[str] = field(default=None, metadata=flag(
        "--init", "fine-tune from a checkpoint of ARCH (any format `eval` reads) or a model string such as "
        "zoo:efficientnet_lite0; the head is replaced by one for the dataset's classes", metavar="CKPT", type=str))
    freeze: bool = field(default=False, metadata=flag(
        "--freeze", "with --init: train the classifier head only", action="store_true"))
    device: str = field(default="cpu", metadata=flag("--device", DEVICE_HELP))
    sync_bn: bool = field(default=False, metadata=flag(
        "--sync-bn", "under torchrun on GPUs: SyncBatchNorm, batch statistics over every process's images (default: "
        "each process normalizes with its own share of the batch)", action="store_true"))

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
#: Group-balanced subsets whose heads DFR averages where its repository gives no number (its code: 20
#: on Waterbirds' validation split, which bgbench uses there, `dfr.fit_head_as_repo`; 10 elsewhere, half the cost).
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
        split: the split read; None: train, or every row of a groups.csv without a split column;
            for `dfr` on Waterbirds, val, where DFR's repository fits it (`dfr.fit_head_as_repo`).
        c_grid: inverse regularization strengths tried; penalty: 'l1' (DFR's) or 'l2'.
        held_out: share of each group held out to choose C.
        retrains: group-balanced subsets whose heads are averaged (DFR); None: 20 on Waterbirds'
            validation split (its repository's), else `DFR_RETRAINS`.
        feature_cache: folder of the cached features (default $BGBENCH_CACHE/features, else
            bgbench/features in $XDG_CACHE_HOME or ~/.cache); 'none' caches nothing.
    """

    data: str
    out: str
    model: str
    recipe: str = "dfr"
    variant: Optional[str] = None
    split: Optional[str] = None
    c_grid: Tuple[float, ...] = field(default=DFR_C_GRID, metadata=flag(
        "--c-grid", "inverse regularization strengths tried, chosen on the held-out share (default: DFR's, "
        "%(default)s)", type=float, nargs="+", metavar="C"))
    penalty: str = field(default="l1", metadata=flag(
        "--penalty", "the head's regularization (default %(default)s, DFR's)", choices=("l1", "l2")))
    held_out: float = field(default=0.5, metadata=flag(
        "--held-out", "share of each group held out to choose C (default %(default)s)"))
    retrains: Optional[int] = field(default=None, metadata=flag(
        "--retrains", f"dfr: group-balanced subsets whose heads are averaged (default: 20 on Waterbirds' validation "
        f"split, as DFR's repository; else {DFR_RETRAINS})", type=int))
    seed: int = 0
    batch_size: int = 64
    device: str = "cpu"
    feature_cache: Optional[str] = field(default=None, metadata=flag(
        "--feature-cache", "folder of cached penultimate features (default $BGBENCH_CACHE/features, else "
        "bgbench/features in $XDG_CACHE_HOME or ~/.cache; 'none': no cache)", metavar="DIR", type=str))

    def model_options(self, split: Optional[str]) -> ModelOptions:
        """The frozen model's options (its data: the split the head is fitted on)."""
        return ModelOptions(**{**{f.name: getattr(self, f.name) for f in dataclasses.fields(ModelOptions)},
                               "data": self.data, "split": split})

    def __post_init__(self):
        checks.one_of("--recipe", self.recipe, last_layer_recipes())
        checks.one_of("--penalty", self.penalty, ("l1", "l2"))
        checks.within("--held-out", self.held_out, 0, 1, open_low=True, open_high=True)
        checks.at_least("--retrains", self.retrains, 1)  # None: the default
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.device(self.device)
        self.c_grid = tuple(float(c) for c in self.c_grid)
        if not self.c_grid or min(self.c_grid) <= 0:
            raise BgbenchError("--c-grid takes positive inverse regularization strengths, e.g. 1 0.3 0.1")
