"""How the measures that explain a model's own prediction (saliency, features) name the classes it
predicts: as `bgbench predict` names them."""
from __future__ import annotations

from typing import Sequence


def prediction_namer(classes: Sequence[str], dataset_labels: bool):
    """Names for predicted indices: the dataset's class names when the model predicts them; a
    1000-class model's raw ImageNet index by ImageNet's class description ('bobsled (450)', as
    `bgbench predict` names it); else 'class <i>'."""
    describe = None
    if not dataset_labels:
        try:
            from timm.data import ImageNetInfo
            describe = ImageNetInfo().index_to_description
        except Exception:  # noqa: BLE001 - timm's table unavailable: the index alone
            describe = None

    def name(i: int) -> str:
        if dataset_labels and 0 <= i < len(classes):
            return classes[i]
        if describe is not None and 0 <= i < 1000:
            return f"{describe(i)} ({i})"
        return f"class {i}"
    return name
