"""The watermark measure: ImageNet-W (Li et al., "A Whac-A-Mole Dilemma", CVPR 2023).

Two arms of the same images: `clean`, and `watermarked`, each decoded image given ImageNet-W's
watermark by the `imagenet-w` package (`variants.watermark`), where Whac-A-Mole inserts it: after
the resize and crop, before normalization. On ImageNet's val the gap is Whac-A-Mole's **IN-W gap**
(acc(IN-W) - acc(IN-1k)) and, on the images of class 478 (carton), its **Carton gap**: a model that
learnt "this text means carton" calls watermarked images cartons, so its accuracy falls while
cartons gain. On any IN-9-layout dataset the same two arms give a watermark gap of its own; the
carton's part is played by `--carton-class` (default: the class a Synthetic-9 built with
`--watermark-correlation` marked).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

from ...errors import BgbenchError
from ...options import flag
from ..arms import Arm, ArmRow, ArmsConfig, ArmsMeasure, gap_section_spec
from ..registry import GapArms, ShortcutColumn, Headline
from ..gaps import GapSummary, arm_accuracy, correct_by, gap, resampling, two_arms

CLEAN, WATERMARKED = "clean", "watermarked"
#: ImageNet's carton synset (class 478).
CARTON_WNID = "n02971356"
#: Where Synthetic-9 records the class its `--watermark-correlation` marked.
SYNTH_INFO = "SYNTHETIC9.json"


@dataclass(kw_only=True)
class WatermarkConfig(ArmsConfig):
    carton_class: Optional[str] = field(default=None, metadata=flag(
        "--carton-class", "the class folder the watermark is a shortcut to, whose images give the Carton gap "
        "(default: ImageNet's carton, n02971356, where the dataset has it; the class a Synthetic-9 built with "
        "--watermark-correlation marked; else none)", metavar="CLASS", type=str))


def carton_of(layout, asked: Optional[str]) -> Optional[str]:
    """The class folder that plays the carton's part on `layout` (see the module docstring)."""
    classes = list(layout.classes)
    if asked is not None:
        if asked not in classes:
            raise BgbenchError(f"--carton-class {asked!r} is not a class of {layout.root} ({', '.join(classes[:9])}"
                               f"{', ...' if len(classes) > 9 else ''})")
        return asked
    if CARTON_WNID in classes:
        return CARTON_WNID
    info = Path(layout.root) / SYNTH_INFO
    if info.is_file():
        try:
            splits = json.loads(info.read_text()).get("splits", {})
        except (OSError, ValueError):
            return None
        # the split measured (val) is usually not the one marked (train): the marked class is the dataset's
        for split in sorted(splits, key=lambda k: k != layout.split):
            marked = splits[split].get("watermark") if isinstance(splits[split], dict) else None
            if isinstance(marked, dict) and marked.get("class") in classes:
                return marked["class"]
    return None


class WatermarkMeasure(ArmsMeasure):
    """ImageNet-W's watermark gap and Carton gap (see the module docstring)."""

    name = "watermark"
    position = 140
    source = ("Whac-A-Mole's `eval_shortcuts/eval_multiple_shortcuts.py` with the `imagenet-w` "
              "package's `AddWatermark`: acc(watermarked) − acc(clean), and the Carton gap")
    checked_against = ("tests/measures/test_shortcuts.py (the test's own `AddWatermark` on "
                       "torchvision's crop and a plain forward give every stored prediction; the "
                       "gaps by Whac-A-Mole's formulas)")
    title = "watermark shortcut (IN-W gap)"
    help = "ImageNet-W: accuracy on watermarked copies against clean ones (IN-W gap) and the Carton gap"
    description = ("the IN-W gap and Carton gap of Whac-A-Mole: each image with ImageNet-W's watermark (the imagenet-w "
                   "package's transform and font) against the clean image, on ImageNet's val (--data ROOT of either "
                   "release layout) or any IN-9-layout dataset")
    data_help = "images: ImageNet's val (either release layout) or original/"
    config = WatermarkConfig
    headlines = (Headline("watermark_gap", label="watermark gap (IN-W gap on ImageNet; < 0: the mark costs accuracy)",
                          percent=True, short="watermark gap"),
                 Headline("carton_gap", label="Carton gap (> 0: the mark pulls images to the carton)",
                          percent=True, higher_is_better=False, short="Carton gap"))
    sections = (gap_section_spec("watermark", "Watermark shortcut (ImageNet-W)", __package__),)
    gap_note = ("Each image against a copy with ImageNet-W's watermark (the imagenet-w package's transform and font, "
                "drawn after the resize and crop as Whac-A-Mole does); the Carton gap is the same on the images of "
                "the class the mark is a shortcut to.")
    gap_arms = GapArms(CLEAN, WATERMARKED)
    shortcut_columns = (ShortcutColumn(20, "in_w_gap", "IN-W gap", "watermark_gap", other_title="watermark gap"),
                        ShortcutColumn(30, "carton_gap", "Carton gap", "carton_gap", higher_is_better=False,
                                       class_of="carton"))
    forwards_per_image = 2  # each image clean and watermarked

    def arms(self, run, layout) -> List[Arm]:
        from ...data.images import decode_item
        from ...variants.watermark import watermark_image
        cfg = run.cfg
        carton_of(layout, cfg.carton_class)  # a class that is not there: one line before any forward
        return [Arm(CLEAN, layout), Arm(WATERMARKED, layout, render=lambda item: watermark_image(decode_item(item)))]

    def recorded(self, run) -> dict:
        cfg = run.cfg
        carton = carton_of(run.layout, cfg.carton_class)
        return {"carton": None if carton is None else {"class": carton,
                                                       "label": list(run.layout.classes).index(carton)},
                "watermark": "imagenet_w.AddWatermark(image_size=the image's side) on ToTensor's image, before "
                             "normalization"}

    def summarize(self, rows: Sequence[ArmRow], config: dict) -> GapSummary:
        summary = two_arms("watermark shortcut (ImageNet-W): watermarked - clean", "watermark_gap", rows, CLEAN,
                           WATERMARKED, config)
        carton = config.get("carton")
        if carton:
            seed, reps = resampling(config)
            label = int(carton["label"])
            on = (lambda y: y == label)
            c, m = correct_by(rows, CLEAN, on), correct_by(rows, WATERMARKED, on)
            summary.extra["carton_gap"] = {**gap(c, m, seed, reps), "class": carton["class"],
                                           "accuracy": {CLEAN: arm_accuracy(c), WATERMARKED: arm_accuracy(m)}}
        else:
            summary.notes.append("carton gap: no carton class on this dataset (--carton-class names one)")
        return summary
