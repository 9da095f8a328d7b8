"""The texture measure: Whac-A-Mole's **SIN gap**, acc(Stylized-ImageNet val) - acc(ImageNet val).

Stylized-ImageNet (Geirhos et al., ICLR 2019) keeps each val image's shape and replaces its texture
with a painting's; a model that classifies by texture loses most of its accuracy there. Both arms
are scored over ImageNet's 1000 classes by the argmax, as Whac-A-Mole's trainer does for
`imagenet-stylized` (no mapping). The reference is `--data` (ImageNet's val, in either release
layout); `--stylized` is Stylized-ImageNet's val as it is released, in torchvision's layout
(`ROOT/val/<wnid>/`). Where its file stems are the val's own, the gap is paired over them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from ...errors import BgbenchError
from ...options import flag
from ..arms import Arm, ArmRow, ArmsConfig, ArmsMeasure, gap_section_spec
from ..common.imagenet_reference import folder_option, imagenet_reference, require_imagenet_model
from ..registry import GapArms, ShortcutColumn, Headline
from ..gaps import GapSummary, stem, two_arms

REFERENCE, STYLIZED = "imagenet", "stylized"


@dataclass(kw_only=True)
class TextureConfig(ArmsConfig):
    stylized: Optional[str] = field(default=None, metadata=flag(
        "--stylized", "Stylized-ImageNet as released: a root holding val/<wnid>/ (torchvision's layout), or its "
        "ILSVRC-style tree", metavar="ROOT", type=str, required=True))

    def __post_init__(self):
        super().__post_init__()
        if self.stylized is None:
            raise BgbenchError("texture needs --stylized ROOT, Stylized-ImageNet's val (the images it scores "
                               "against --data's)")


class TextureMeasure(ArmsMeasure):
    """Whac-A-Mole's SIN gap (see the module docstring)."""

    name = "texture"
    position = 150
    source = ("Whac-A-Mole's script: acc(Stylized-ImageNet val) − acc(ImageNet val), argmax over "
              "the 1000 classes")
    checked_against = ("tests/measures/test_shortcuts.py (acc(SIN) − acc(val) paired by file stem, "
                       "from the test's own reads)")
    title = "texture shortcut (SIN gap)"
    help = "Stylized-ImageNet: accuracy on stylized copies of ImageNet's val against the val (SIN gap)"
    description = ("Whac-A-Mole's SIN gap: a 1000-class model's accuracy on Stylized-ImageNet's val (--stylized) minus "
                   "its accuracy on ImageNet's val (--data), both by the argmax over the 1000 classes")
    data_help = "ImageNet's own images (the ILSVRC archive or torchvision's ROOT/val/<wnid>/)"
    needs = ("model", "imagenet")
    config = TextureConfig
    headlines = (Headline("sin_gap", label="SIN gap (< 0: stylized textures cost accuracy)", percent=True,
                          short="SIN gap"),)
    sections = (gap_section_spec("texture", "Texture shortcut (Stylized-ImageNet)", __package__),)
    gap_note = ("A 1000-class model on Stylized-ImageNet's val (each image's texture replaced by a painting's) "
                "against ImageNet's val, both by the argmax over the 1000 classes (Whac-A-Mole's SIN gap).")
    gap_arms = GapArms(REFERENCE, STYLIZED, key="stem")  # a stylized copy keeps its original's file stem
    shortcut_columns = (ShortcutColumn(40, "sin_gap", "SIN gap", "sin_gap", data="imagenet"),)

    def arms(self, run, layout) -> List[Arm]:
        from ...data.imagenet_folders import find_imagenet
        model, cfg = run.model, run.cfg
        require_imagenet_model(model, self.name)
        reference = imagenet_reference(layout, self.name)  # --data first: a problem there is --data's to fix
        stylized = find_imagenet(folder_option(cfg.stylized, "--stylized"), "val")
        if stylized is None:
            raise BgbenchError(f"--stylized {cfg.stylized}: expected Stylized-ImageNet as released, a root holding "
                               f"val/<wnid>/ or an ILSVRC-style tree")
        if tuple(stylized.classes) != tuple(reference.classes):
            raise BgbenchError(f"--stylized {cfg.stylized}: expected ImageNet's 1000 class folders, found "
                               f"{len(stylized.classes)}")
        return [Arm(REFERENCE, reference), Arm(STYLIZED, stylized)]

    def summarize(self, rows: Sequence[ArmRow], config: dict) -> GapSummary:
        return two_arms("texture shortcut (Stylized-ImageNet): stylized - ImageNet val", "sin_gap", rows, REFERENCE,
                        STYLIZED, config, key=stem)
