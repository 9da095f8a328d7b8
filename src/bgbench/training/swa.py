"""Stochastic Weight Averaging with `torch.optim.swa_utils` (AveragedModel, SWALR, update_bn).

The base schedule (one-cycle) runs for the first `start` share of the epochs; from then on
SWALR holds the learning rate at `swa_lr` and the weights are averaged once per epoch. At the
end, BatchNorm statistics are recomputed for the averaged weights over the training data,
because averaged weights do not match any running statistics seen during training.
"""
from __future__ import annotations

import math
from typing import Iterable

import torch
from torch import nn
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn

from .recipes import DEFAULT_SWA_START


def swa_start_epoch(epochs: int, start: float = DEFAULT_SWA_START) -> int:
    """First epoch (0-based) whose weights are averaged; at least one epoch is always averaged."""
    return min(max(int(math.floor(start * epochs)), 0), max(epochs - 1, 0))


def make_swa(model: nn.Module) -> AveragedModel:
    """An equal-weight running average of `model` (buffers are recomputed by `finalize_bn`)."""
    return AveragedModel(model)


def make_swalr(optimizer: torch.optim.Optimizer, swa_lr: float, anneal_epochs: int = 1) -> SWALR:
    """Cosine anneal to `swa_lr` over `anneal_epochs`, then constant; stepped once per epoch."""
    return SWALR(optimizer, swa_lr=swa_lr, anneal_epochs=max(1, anneal_epochs), anneal_strategy="cos")


def finalize_bn(swa_model: AveragedModel, batches: Iterable[torch.Tensor]) -> None:
    """Recompute BatchNorm running statistics of the averaged model over `batches` of inputs."""
    update_bn(batches, swa_model)
