"""The in9_gap measure: Whac-A-Mole's **IN-9 gap**, acc(MIXED-RAND) - acc(MIXED-SAME), read as its code reads IN-9.

Whac-A-Mole (Li et al., CVPR 2023) scores IN-9's `mixed_same` and `mixed_rand` val folders as
torchvision ImageFolders (`dataset/imagenet9.py`) through its ImageNet test transform
(`imagenet_trainers/base_trainer.py`: `Resize(256)`, `CenterCrop(224)`, `ToTensor`, ImageNet's
`Normalize`); a 1000-class model's argmax is mapped by upstream's `in_to_in9.json` (a class with no
IN-9 class counts wrong), and `in_9_gap = in_9_mixed_rand_acc - in_9_mixed_same_acc`.

bgbench's eval feeds the same folders as the Backgrounds Challenge does, each image as it is, so its
BG-Gap is not this gap's negative: the crop enlarges the object and cuts the background's edges.
This measure is the IN-9 pass with Whac-A-Mole's preprocessing, and the shortcut table's IN-9 gap
column reads it. Each image is decoded, then torchvision's `Resize(256)` and `CenterCrop(224)` run
on it (`data.images`, the crop every ImageNet column of the table is read with); the model's own
normalization and resize policy follow, as in every column (ImageNet's mean and std for ImageNet
weights). Only the two folders are read, so it runs on the IN-9 release and on Whac-A-Mole's copy
of it (a root holding only `mixed_same/` and `mixed_rand/`). A foreground keeps its id in both
folders, so the gap is paired over the foregrounds.
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Sequence

from ..arms import Arm, ArmRow, ArmsConfig, ArmsMeasure, gap_section_spec
from ..registry import CROP, GapArms, ShortcutColumn, Headline
from ..gaps import GapSummary, two_arms

MIXED_SAME, MIXED_RAND = "mixed_same", "mixed_rand"


def cropped(layout, variant: str):
    """`variant`'s images of `layout` as a layout of one variant (`original`), each read through
    ImageNet's evaluation crop (`data.imagenet_folders.EVAL_CROP`: Resize(256), CenterCrop(224))."""
    from ...data.imagenet_folders import EVAL_CROP
    from ...data.maskless import ImagesOnlyLayout
    out = ImagesOnlyLayout(root=layout.root, split=layout.split, classes=tuple(layout.classes),
                           variants=("original",))
    out._items["original"] = [replace(it, crop=EVAL_CROP) for it in layout.items(variant)]
    return out


class In9GapMeasure(ArmsMeasure):
    """Whac-A-Mole's IN-9 gap (see the module docstring)."""

    name = "in9_gap"
    position = 135
    source = ("Whac-A-Mole's `imagenet_trainers/base_trainer.py` and `dataset/imagenet9.py`: "
              "acc(MIXED-RAND) − acc(MIXED-SAME), each image through Resize(256) and CenterCrop(224), "
              "a 1000-class model's argmax mapped by `in_to_in9.json`")
    checked_against = ("tests/measures/test_in9_gap.py (torchvision's Resize(256), CenterCrop(224), "
                       "ToTensor and ImageNet's Normalize on the test's own images, a plain forward and "
                       "the in_to_in9 table give every stored prediction; the gap by Whac-A-Mole's formula)")
    title = "background shortcut (IN-9 gap)"
    help = ("IN-9 read as Whac-A-Mole reads it: accuracy on MIXED-RAND against MIXED-SAME, each image through "
            "Resize(256) and CenterCrop(224) (IN-9 gap)")
    description = ("Whac-A-Mole's IN-9 gap: acc(MIXED-RAND) minus acc(MIXED-SAME), each image through torchvision's "
                   "Resize(256) and CenterCrop(224) as Whac-A-Mole's evaluation reads IN-9 (bgbench eval's BG-Gap "
                   "feeds the images as they are); on the IN-9 release or a root holding only mixed_same/ and "
                   "mixed_rand/")
    data_help = "an IN-9 layout with mixed_same/ and mixed_rand/"
    needs = ("model", "mixed")
    config = ArmsConfig  # the seed of its interval and the decision rule, as every shortcut measure's
    headlines = (Headline("in9_gap", label="IN-9 gap, Whac-A-Mole's (< 0: unrelated backgrounds cost accuracy)",
                          percent=True, short="IN-9 gap"),)
    sections = (gap_section_spec("in9_gap", "Background shortcut (Whac-A-Mole's IN-9 gap)", __package__),)
    gap_note = ("IN-9's MIXED-SAME and MIXED-RAND read as Whac-A-Mole reads them: each image through torchvision's "
                "Resize(256) then CenterCrop(224), a 1000-class model's argmax mapped to IN-9's classes; the gap is "
                "MIXED-RAND minus MIXED-SAME. The accuracy section's BG-Gap feeds the images as they are (the "
                "Backgrounds Challenge's protocol), so it is not this gap's negative.")
    gap_arms = GapArms(MIXED_SAME, MIXED_RAND)
    shortcut_columns = (ShortcutColumn(60, "in9_gap", "IN-9 gap", "in9_gap", data="other", preprocessing=CROP),)
    forwards_per_image = 2  # each foreground on its own background and on a random one

    def reads(self, cfg, data, given):
        """--data's mixed_same and mixed_rand (no `original`: Whac-A-Mole's copy of IN-9 has none)."""
        return {"variants": [MIXED_SAME, MIXED_RAND]}

    def arms(self, run, layout) -> List[Arm]:
        return [Arm(MIXED_SAME, cropped(layout, MIXED_SAME)), Arm(MIXED_RAND, cropped(layout, MIXED_RAND))]

    def recorded(self, run) -> dict:
        return {"preprocessing": "torchvision Resize(256) then CenterCrop(224) on the decoded image (Whac-A-Mole's "
                                 "test transform), then the model's own normalization and resize policy"}

    def summarize(self, rows: Sequence[ArmRow], config: dict) -> GapSummary:
        return two_arms("background shortcut (Whac-A-Mole's IN-9 gap): mixed_rand - mixed_same", "in9_gap", rows,
                        MIXED_SAME, MIXED_RAND, config)
