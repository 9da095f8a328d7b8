"""The renditions measure: Whac-A-Mole's **IN-R gap**, acc(ImageNet-R) - acc(ImageNet-200).

ImageNet-R (Hendrycks et al., ICCV 2021) holds renditions of 200 ImageNet classes, as released:
`ROOT/<wnid>/<image>` (`--renditions`). ImageNet-200 is ImageNet's val (`--data`) restricted to
the same classes, Whac-A-Mole's `dataset/imagenet_200.py`. Both are scored as Whac-A-Mole's trainer
scores them (`map_prediction`, `output[:, mask].argmax(1)`): only the 200 classes' logits compete
(`classes.restricted_logits`), so a prediction is always one of them. The classes are the wnid
folders the renditions folder has (ImageNet-R's 200), sorted, as ImageFolder numbers them. The two
arms hold different images, so the gap's interval resamples each on its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence

from ...errors import BgbenchError
from ...options import flag
from ..arms import Arm, ArmRow, ArmsConfig, ArmsMeasure, gap_section_spec
from ..common.imagenet_reference import folder_option, imagenet_reference, require_imagenet_model
from ..registry import GapArms, ShortcutColumn, Headline
from ..gaps import GapSummary, two_arms

REFERENCE, RENDITIONS = "imagenet_200", "renditions"


@dataclass(kw_only=True)
class RenditionsConfig(ArmsConfig):
    renditions: Optional[str] = field(default=None, metadata=flag(
        "--renditions", "ImageNet-R as released: a root holding one folder per wnid (its 200 classes)",
        metavar="ROOT", type=str, required=True))

    def __post_init__(self):
        super().__post_init__()
        if self.renditions is None:
            raise BgbenchError("renditions needs --renditions ROOT, ImageNet-R (ROOT/<wnid>/<image>)")


def restricted_forward(model, x):
    """Only the arm's classes compete: ImageNet-R's `map_prediction` (the model's class map is the
    arm's, set by `BgModel.meet` before the arm runs)."""
    from ...classes import restricted_logits
    return restricted_logits(model(x), model.class_map)


def restrict(layout, classes: Sequence[str]):
    """ImageNet-200: `layout`'s images of `classes` (wnids), relabelled by their position there."""
    from ...data.imagenet_folders import ImageNetLayout
    position = {c: k for k, c in enumerate(classes)}
    wnids = list(layout.classes)
    items = [replace(it, label=position[wnids[it.label]]) for it in layout.items("original")
             if wnids[it.label] in position]
    if not items:
        raise BgbenchError(f"{layout.root} has no images of the renditions' classes")
    out = ImageNetLayout(root=layout.root, split=layout.split, classes=tuple(classes), variants=("original",),
                         source=layout.source)
    out._items["original"] = items
    return out


def _wnid_folders_only(root: str) -> str:
    """ImageNet-R's root holds one wnid folder per class and nothing else but files: a stray folder
    is named in one line (read as a dataset, it would get the IN-9 layout's advice instead)."""
    from pathlib import Path

    from ...data.imagenet import is_wnid
    stray = sorted(p.name for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith(".")
                   and not is_wnid(p.name))
    if stray:
        more = f" (and {len(stray) - 1} more: {', '.join(stray[1:4])}{' ...' if len(stray) > 4 else ''})" \
            if len(stray) > 1 else ""
        raise BgbenchError(f"--renditions {root}: {Path(root) / stray[0]} is not a wnid folder{more}; ImageNet-R "
                           f"holds one n######## folder per class, and nothing else: move it out")
    return root


class RenditionsMeasure(ArmsMeasure):
    """Whac-A-Mole's IN-R gap (see the module docstring)."""

    name = "renditions"
    position = 160
    source = ("Whac-A-Mole's `dataset/imagenet_r.py` and `imagenet_200.py` (`map_prediction`): "
              "ImageNet-R against the val restricted to its 200 classes")
    checked_against = ("tests/measures/test_shortcuts.py (`output[:, mask].argmax(1)` on the test's "
                       "own ImageFolder reads of ImageNet-R and ImageNet-200)")
    title = "rendition shortcut (IN-R gap)"
    help = "ImageNet-R: accuracy on renditions of 200 classes against ImageNet's photographs of them (IN-R gap)"
    description = ("Whac-A-Mole's IN-R gap: a 1000-class model's accuracy on ImageNet-R (--renditions) minus its accuracy "
                   "on ImageNet's val restricted to the same classes (--data), only those classes' logits competing")
    data_help = "ImageNet's own images (the ILSVRC archive or torchvision's ROOT/val/<wnid>/)"
    needs = ("model", "imagenet")
    config = RenditionsConfig
    headlines = (Headline("in_r_gap", label="IN-R gap (< 0: renditions cost accuracy)", percent=True,
                          short="IN-R gap"),)
    sections = (gap_section_spec("renditions", "Rendition shortcut (ImageNet-R)", __package__),)
    gap_note = ("A 1000-class model on ImageNet-R's renditions against ImageNet's val photographs of the same classes"
                " (ImageNet-200), only those classes' logits competing (Whac-A-Mole's IN-R gap).")
    gap_arms = GapArms(REFERENCE, RENDITIONS)
    shortcut_columns = (ShortcutColumn(50, "in_r_gap", "IN-R gap", "in_r_gap", data="imagenet"),)

    def arms(self, run, layout) -> List[Arm]:
        from ...data.imagenet_folders import CLASS_FOLDERS, find_imagenet
        model, cfg = run.model, run.cfg
        require_imagenet_model(model, self.name)
        renditions = find_imagenet(_wnid_folders_only(folder_option(cfg.renditions, "--renditions")))
        if getattr(renditions, "source", "") != CLASS_FOLDERS:
            raise BgbenchError(f"--renditions {cfg.renditions}: expected ImageNet-R's layout, one folder per wnid")
        reference = restrict(imagenet_reference(layout, self.name), renditions.classes)
        return [Arm(REFERENCE, reference, forward=restricted_forward),
                Arm(RENDITIONS, renditions, forward=restricted_forward)]

    def recorded(self, run) -> dict:
        return {"rule": "argmax over the renditions' classes' logits (ImageNet-R's map_prediction)"}

    def summarize(self, rows: Sequence[ArmRow], config: dict) -> GapSummary:
        return two_arms("rendition shortcut (ImageNet-R): renditions - ImageNet-200", "in_r_gap", rows, REFERENCE,
                        RENDITIONS, config)
