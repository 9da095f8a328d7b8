"""The ImageNet-X measure: a 1000-class model's predictions on ImageNet's val (`--data`, either
release layout), each stored under its file name, and the error ratio of each factor of variation
(`summary`, by the imagenet-x package). Its headline is the `background` factor's ratio, the human
labels' view of what the Backgrounds Challenge measures with synthetic images.

Before any forward, every file name must be one of ImageNet's val and of the class ImageNet gives
it (the package's filename_label.csv): a renamed or foreign folder would join on nothing, or on the
wrong images, and is refused in one line naming the first mismatch.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from ...errors import BgbenchError
from ...evaluation.metrics import REPLICATES
from ..arms import Arm, ArmRow, ArmsConfig, ArmsMeasure
from ..common.imagenet_reference import imagenet_reference, require_imagenet_model
from ..registry import ShortcutColumn, Headline, SectionSpec
from .summary import BACKGROUND, ImageNetXSummary, ratio_difference, summarize_imagenet_x, val_labels

ARM = "imagenet"


def check_val_names(layout) -> None:
    """Every image is an ImageNet val file of its own class, or one line naming the first that is not."""
    known = val_labels()
    for item in layout.items("original"):
        name = item.path.name
        if name not in known:
            raise BgbenchError(f"{item.path}: not one of ImageNet's 50,000 val file names, which ImageNet-X's annotations "
                               f"are keyed by (ILSVRC2012_val_00000001.JPEG ...)")
        if known[name] != item.label:
            raise BgbenchError(f"{item.path}: ImageNet's val gives {name} class {known[name]}, the folder class "
                               f"{item.label}: the folder does not match ImageNet-X's annotations")


class ImageNetXMeasure(ArmsMeasure):
    """ImageNet-X's per-factor error ratios (see the module docstring)."""

    name = "imagenet_x"
    position = 170
    source = ("the `imagenet-x` package (`augment_model_predictions`, `compute_factor_accuracies`, "
              "`error_ratio`): each factor's error ratio, background among them")
    checked_against = ("tests/measures/test_shortcuts.py (the package's own functions on the same "
                       "predictions)")
    title = "ImageNet-X factors (background error ratio)"
    help = "ImageNet-X: the error ratio of each of 16 labelled factors on ImageNet's val, background among them"
    description = ("ImageNet-X's error ratios (a factor's error over the overall error, > 1: the factor makes the model "
                   "fail more) from the imagenet-x package's annotations and functions, on ImageNet's val (--data)")
    data_help = "ImageNet's own val images (the ILSVRC archive or torchvision's ROOT/val/<wnid>/)"
    needs = ("model", "imagenet")
    config = ArmsConfig  # the options every paired measure takes, none of its own: the val and the annotations decide
    headlines = (Headline("imagenet_x_error_ratio", BACKGROUND, label="ImageNet-X background error ratio (> 1: "
                                                                      "unusual backgrounds cost accuracy)",
                          higher_is_better=False, short="bg error ratio"),)
    sections = (SectionSpec("imagenet_x", "ImageNet-X factors of variation", f"{__package__}.section:imagenet_x_section"),)
    shortcut_columns = (ShortcutColumn(90, "bg_error_ratio", "ImageNet-X bg error ratio", "imagenet_x_error_ratio",
                                       BACKGROUND, percent=False, higher_is_better=False, data="imagenet",
                                       change=f"{__package__}:MEASURE.shortcut_change"),)
    forwards_per_image = 1

    def arms(self, run, layout) -> List[Arm]:
        model = run.model
        require_imagenet_model(model, self.name)
        layout = imagenet_reference(layout, self.name)
        if layout.split != "val":
            raise BgbenchError(f"ImageNet-X annotates ImageNet's val; --split is {layout.split}")
        check_val_names(layout)
        return [Arm(ARM, layout)]

    def summarize(self, rows: Sequence[ArmRow], config: dict) -> ImageNetXSummary:
        mine = [r for r in rows if r.arm == ARM]
        return summarize_imagenet_x([r.image_id for r in mine], [r.pred for r in mine], seed=int(config.get("seed", 0)),
                                    replicates=int(config.get("bootstrap_replicates", REPLICATES)))

    def shortcut_change(self, store, column, base_run: int, derived_run: int, seed: int = 0) -> Optional[dict]:
        """Its column of the shortcut table as a derived model's paired change from its base: the
        background error ratio of `derived_run` minus `base_run`'s, both on the same resampled images,
        with a paired 95% interval; None when the runs are not on the same images."""
        rows = [[(r["image_id"], r["pred"]) for r in store.probe_rows(self.table.name, run)]
                for run in (base_run, derived_run)]
        return ratio_difference(rows[0], rows[1], BACKGROUND, seed=seed)
