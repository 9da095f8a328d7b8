"""Networks whose input shape is fixed in the file: ONNX models and torch.export programs exported
without dynamic shapes.

bgbench's batches vary in size (the last one is short, the challenge's composites come in any
number), so a fixed batch size is met by running chunks of exactly that size, the last one padded
by repeating its last image (an eval-mode classifier scores each image on its own, so the padding
changes no other image's logits). A fixed image size cannot be met that way: `check_size` says
so in one line before a job runs, and the wrappers refuse such a forward the same way.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import torch

from ..errors import BgbenchError


def static_dims(shape: Sequence) -> Tuple[Optional[int], Optional[Tuple[int, int]]]:
    """(batch, (H, W)) of an input shape (N, C, H, W) whose entries are ints where fixed, anything
    else (a name, None, a symbol) where dynamic; None for the parts that are not fixed."""
    batch, h, w = (int(d) if isinstance(d, int) and not isinstance(d, bool) and d > 0 else None
                   for d in (shape[0], shape[2], shape[3]))
    return batch, ((h, w) if h is not None and w is not None else None)


def in_fixed_batches(run: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, batch: Optional[int],
                     name: str, fixed_hw: Optional[Tuple[int, int]]) -> torch.Tensor:
    """`run(x)`, for a network that takes only batches of `batch` images (None: any number) of
    `fixed_hw` (None: any size; another size is refused in one line, as `check_size` says)."""
    check_size(name, fixed_hw, x.shape[-2:])
    if batch is None or x.shape[0] == batch:
        return run(x)
    outs = []
    for chunk in x.split(batch):
        short = batch - chunk.shape[0]
        if short:
            chunk = torch.cat([chunk, chunk[-1:].expand(short, *chunk.shape[1:])])
        outs.append(run(chunk)[:batch - short])
    return torch.cat(outs)


def check_size(name: str, fixed_hw: Optional[Tuple[int, int]], fed_hw: Tuple[int, int]) -> None:
    """Refuse in one line to feed `fed_hw` images to a network whose file fixes its input to
    `fixed_hw` (the runtime's own error is pages long); None: any size."""
    if fixed_hw is not None and tuple(fed_hw) != tuple(fixed_hw):
        raise BgbenchError(f"{name} takes only {fixed_hw[0]}x{fixed_hw[1]} images (its file fixes the input shape) "
                           f"but would be fed {fed_hw[0]}x{fed_hw[1]}; drop --resize none (--resize native resizes "
                           f"them to its size), or export it with dynamic height and width")
