"""What the measures that score an ImageNet model on ImageNet's own classes share (texture,
renditions, ImageNet-X, Spurious and Salient ImageNet): the model and the data they accept, and the
folders of images they read besides --data."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...classes import IMAGENET1K
from ...errors import BgbenchError


def folder_option(value: Optional[str], flag_name: str) -> Optional[str]:
    """A dataset folder a measure reads besides --data: the folder it names, or one line."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise BgbenchError(f"{flag_name} {value}: no such folder")
    return str(path)


def require_imagenet_model(model, measure: str) -> None:
    """Texture and renditions read ImageNet's 1000 classes: a model with other outputs is refused."""
    if model.spec.label_space != IMAGENET1K:
        raise BgbenchError(f"{measure} scores a 1000-class ImageNet model on ImageNet's classes; {model.spec.name} has "
                           f"{model.spec.num_classes} outputs of its dataset's classes")


def imagenet_reference(layout, measure: str):
    """--data must be ImageNet's own images (every class of the 1000) for texture, renditions and
    ImageNet-X."""
    from ...data.imagenet_folders import TREE
    if getattr(layout, "kind", "") != "imagenet" or getattr(layout, "source", "") != TREE:
        raise BgbenchError(f"{measure} compares against ImageNet's val: --data must be ImageNet (the ILSVRC archive or "
                           f"torchvision's ROOT/val/<wnid>/), not {layout.root}")
    return layout
