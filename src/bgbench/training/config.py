"""The training configuration, free of torch so that the CLI reads its defaults at `--help` time."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import checks
from ..errors import BgbenchError
from .recipes import DEFAULT_BGSWAP_P, DEFAULT_CUTMIX_ALPHA, DEFAULT_MIXUP_ALPHA, DEFAULT_SWA_START, list_recipes


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
        checks.within("--bgswap-p", self.bgswap_p, 0, 1)
        checks.at_least("--mixup-alpha", self.mixup_alpha, 0)
        checks.at_least("--cutmix-alpha", self.cutmix_alpha, 0)
        checks.within("--swa-start", self.swa_start, 0, 1, open_high=True)
        checks.within("--swa-lr", self.swa_lr, 0, 10, open_low=True)
        checks.device(self.device)
        if self.freeze and not self.init:
            raise BgbenchError("--freeze trains only the head of a pretrained network: it needs --init CKPT")
