"""The datasets of the paper that `bgbench build --imagenet ROOT --preset NAME` rebuilds (Appendix A).

- `in9`: the 370 synsets that upstream's `in_to_in9.json` maps to an IN-9 class, in IN-9's 9 folders;
  only images with exactly one box; the Appendix A filters and GrabCut; the 8 release variants; balanced.
- `in9l`: every image of those synsets, boxes or not; `original` only; balanced (the paper's larger
  training set: "all the images in ImageNet corresponding to the classes in ORIGINAL").
- `full-in`: every synset, one folder per wnid in ImageNet's class order (folder position = ImageNet
  index, so a 1000-class model is scored on its own labels); the filters; the 8 release variants,
  i.e. `original` and the 7 variations of Table 5. Not balanced: the paper notes that some classes keep
  few or no images, and balancing would empty them all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

from ..classes import IN9_FOLDERS, imagenet_to_in9
from ..data.imagenet import imagenet_synsets
from ..data.layout import IN9_VARIANTS
from ..errors import BgbenchError

IN9, IN9L, FULL_IN = "in9", "in9l", "full-in"
PRESETS = (IN9, IN9L, FULL_IN)


@dataclass(frozen=True)
class Preset:
    """Which synsets go to which class folder, which variants are built, and the filters' scope."""

    name: str
    classes: Tuple[str, ...]  # class folders, in label order
    folder_of: Dict[str, int]  # wnid -> label (only the synsets the preset takes)
    variants: Tuple[str, ...]
    needs_box: bool  # exactly one box, the crop filters and GrabCut (False: every image, original only)
    balance: bool  # the default of --balance


def get_preset(name: str) -> Preset:
    wnids = imagenet_synsets()
    if name in (IN9, IN9L):
        table = imagenet_to_in9()
        folder_of = {w: int(table[k]) for k, w in enumerate(wnids) if table[k] >= 0}
        if name == IN9:
            return Preset(IN9, IN9_FOLDERS, folder_of, IN9_VARIANTS, needs_box=True, balance=True)
        return Preset(IN9L, IN9_FOLDERS, folder_of, ("original",), needs_box=False, balance=True)
    if name == FULL_IN:
        return Preset(FULL_IN, wnids, {w: k for k, w in enumerate(wnids)}, IN9_VARIANTS, needs_box=True,
                      balance=False)
    raise BgbenchError(f"--preset {name!r}: expected one of {', '.join(PRESETS)}")
