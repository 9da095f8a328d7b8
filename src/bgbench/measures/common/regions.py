"""The regions of an image that the noise and ablation measures act on, named once for both.

Every image has its object (the foreground, 'fg') and its background ('bg'); Hard ImageNet's
ablations add the object's box ('bbox', 'tile'); an attribute's mask is the region
'attr:<attribute>', on the images that have it. Light: torch is imported only to build regions
(the CLI's --help imports the names).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:
    import torch

#: The region of one attribute's mask is named 'attr:<attribute>'.
ATTRIBUTE_PREFIX = "attr:"
REGION_NAMES = {"fg": "object (foreground)", "bg": "background", "bbox": "object's box",
                "tile": "object's box tiled"}


def region_label(region: str) -> str:
    """'object (foreground)', 'background', or the attribute's name."""
    return REGION_NAMES.get(region, region[len(ATTRIBUTE_PREFIX):] if region.startswith(ATTRIBUTE_PREFIX) else region)


@dataclass
class Region:
    """Where a measure acts: the images of the batch it applies to (`index`) and their masks."""

    name: str
    index: "torch.Tensor"  # (n,) positions in the batch
    where: "torch.Tensor"  # (n, 1, H, W) in {0,1}
    known: Optional[List[int]] = None  # the same positions on the host, where they are known there

    def positions(self) -> List[int]:
        """The positions as a list: known on the host, or read from the device (a wait on a GPU)."""
        return self.known if self.known is not None else self.index.tolist()


def object_regions(mask: "torch.Tensor", parts: Optional[dict] = None) -> list:
    """The foreground and the background of every image of a batch (mask: (N, 1, H, W)), then each
    attribute of `parts` (a batch's: name -> (index, where, known)) on the images that have it."""
    import torch
    every = torch.arange(mask.shape[0], device=mask.device)
    known = list(range(mask.shape[0]))
    return [Region("fg", every, mask, known), Region("bg", every, 1 - mask, known)] + \
        [Region(ATTRIBUTE_PREFIX + name, idx, where, on) for name, (idx, where, on) in (parts or {}).items()]
