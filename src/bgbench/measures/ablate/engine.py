"""The ablation probe's engine (RIVAL10 `attr_importance.py`): tensors in, outcomes out; no I/O.

A region is ablated by replacing its pixels with gray: x·(1 − m) + 0.5·m, as RIVAL10 does. For a
batch, every ablated copy (the foreground, the background, each attribute on the images that have
it) goes through the model together with the clean images, in forwards of `chunk` images, and
each copy's outcome is its prediction and the probability of the image's true class. An image's
outcomes depend on nothing else in its batch.
"""
from __future__ import annotations

from typing import Callable, Dict, Sequence, Tuple

import torch

from .summary import CLEAN
from ..common.regions import Region

GRAY = 0.5  # RIVAL10's fill


def ablate(x: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """x with `where` ((N, 1, H, W) in {0,1}) replaced by gray."""
    return x * (1 - where) + GRAY * where


@torch.no_grad()
def ablation_outcomes(score: Callable[[torch.Tensor], Tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor,
                      regions: Sequence[Region], labels: torch.Tensor, chunk: int = 0,
                      ablated: Sequence[Tuple[str, torch.Tensor, torch.Tensor]] = ()
                      ) -> Dict[str, Tuple[torch.Tensor, torch.Tensor]]:
    """region -> (predictions, true-class probabilities) of its images; 'none' holds the clean images.

    score(images) -> (predicted labels, (n, C) class probabilities). `ablated`: copies made
    otherwise than by graying a region, (name, index (n,), images (n, 3, H, W)) (Hard ImageNet's).
    """
    chunk = chunk or x.shape[0]
    names = [CLEAN] + [r.name for r in regions] + [name for name, _, _ in ablated]
    indices = [torch.arange(x.shape[0], device=x.device)] + [r.index for r in regions] + [i for _, i, _ in ablated]
    copies = torch.cat([x] + [ablate(x[r.index], r.where) for r in regions] + [c for _, _, c in ablated])
    truth = torch.cat([labels[i] for i in indices])
    preds, probs = [], []
    for i in range(0, copies.shape[0], chunk):
        p, pr = score(copies[i:i + chunk].contiguous(memory_format=torch.channels_last))
        preds.append(p)
        probs.append(pr.gather(1, truth[i:i + chunk, None])[:, 0])
    sizes = [int(idx.numel()) for idx in indices]
    return dict(zip(names, zip(torch.cat(preds).split(sizes), torch.cat(probs).split(sizes))))
