"""Stochastic Weight Averaging's schedule, with `torch.optim.swa_utils`' SWALR.

The base schedule (one-cycle) runs for the first `start` share of the epochs; from then on
SWALR holds the learning rate at `swa_lr` and the loop averages the weights once per epoch
(`AveragedModel`). At the end, BatchNorm statistics are recomputed for the averaged weights over
the training data (`update_bn`), because averaged weights do not match any running statistics
seen during training.
"""
from __future__ import annotations

import math

import torch
from torch.optim.swa_utils import SWALR

from .recipes import DEFAULT_SWA_START


def swa_start_epoch(epochs: int, start: float = DEFAULT_SWA_START) -> int:
    """First epoch (0-based) whose weights are averaged; at least one epoch is always averaged."""
    return min(max(int(math.floor(start * epochs)), 0), max(epochs - 1, 0))


def make_swalr(optimizer: torch.optim.Optimizer, swa_lr: float) -> SWALR:
    """Cosine anneal to `swa_lr` over one epoch, then constant; stepped once per epoch."""
    return SWALR(optimizer, swa_lr=swa_lr, anneal_epochs=1, anneal_strategy="cos")
