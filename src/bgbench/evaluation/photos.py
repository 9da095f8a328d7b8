"""What a model sees in a user's own photos: for each image, its top classes by name with their
probabilities, and the dataset class each maps to.

A researcher's first question of a model and a few photos is not an accuracy but "what does it
call this cat?". For a 1000-class ImageNet model the answer is ImageNet's class names (timm's
`ImageNetInfo`) and, beside each, the IN-9 class upstream's table maps it to, or "unmapped": a
prediction there counts as wrong on IN-9 (370 of the 1000 classes map; DESIGN §2). With a
`--class-map` file, its folders replace IN-9's. A model with the dataset's own classes names its
outputs by its training class folders. Images are decoded by content (CMYK, grayscale and
mislabelled PNGs included) and fed as every job feeds them (the model's resize policy).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch

from ..result import Result
from ..class_maps import class_map_entries
from ..classes import IN9_FOLDERS, NO_CLASS, imagenet_to_in9
from ..data.images import IMAGE_SUFFIXES
from ..errors import BgbenchError, DataError
from ..models.inputs import IMAGENET1K, size_note
from ..models.spec import BgModel
from ..options import TOP
from ..models.labels import model_label
from ..data.pixel_cache import Pixels
from .feed import Images, batches


@dataclass
class PhotoPrediction:
    """One image: its size, the size the network saw, its top classes and the mapped decision."""

    path: str
    size: Tuple[int, int]
    fed: Tuple[int, int]
    top: List[dict]  # {index, name, probability, maps_to} best first
    decision: Optional[str]  # the mapped class of the top-1 (None: unmapped), for 1000-class models

    def to_dict(self) -> dict:
        return {"path": self.path, "size": list(self.size), "fed": list(self.fed), "top": self.top,
                "decision": self.decision}


@dataclass
class PhotoPredictions(Result):
    """Every image's predictions, and how the classes were named and mapped."""

    model: str
    model_label: str
    label_space: str
    mapping: Optional[str]  # 'IN-9 (upstream's in_to_in9.json)', 'class map FILE', None for dataset models
    images: List[PhotoPrediction] = field(default_factory=list)
    skipped: List[dict] = field(default_factory=list)  # {path, error} of each file that could not be read

    def to_dict(self) -> dict:
        return {"model": self.model, "model_label": self.model_label, "label_space": self.label_space,
                "mapping": self.mapping, "images": [p.to_dict() for p in self.images], "skipped": self.skipped}

    def table(self) -> List[dict]:
        """One row per image and rank of its top classes."""
        return [{"path": p.path, "rank": rank, "index": t["index"], "name": t["name"], "probability": t["probability"],
                 "maps_to": t.get("maps_to"), "decision": p.decision}
                for p in self.images for rank, t in enumerate(p.top, 1)]

    def text(self) -> str:
        lines = [f"model: {self.model_label}" + (f"; classes mapped through {self.mapping}" if self.mapping else "")]
        width = max([len(t["name"]) for p in self.images for t in p.top] + [10])
        for p in self.images:
            seen = f"{p.size[0]}x{p.size[1]}" + (f", fed at {p.fed[0]}x{p.fed[1]}" if p.fed != p.size else "")
            lines.append(f"{p.path} ({seen})")
            for t in p.top:
                index = f"{t['index']:>4} " if self.label_space == IMAGENET1K else ""
                mapped = f"  -> {t['maps_to'] or 'unmapped'}" if self.mapping else ""
                lines.append(f"  {100 * t['probability']:5.1f}%  {index}{t['name']:<{width}}{mapped}")
            if self.mapping:
                lines.append(f"  decision: {p.decision or 'unmapped (the top class maps to none: wrong on every class)'}")
        return "\n".join(lines)


def image_paths(paths: Sequence[str | Path]) -> List[Path]:
    """The images named: files as given, folders searched recursively for image files (sorted);
    a path that does not exist, or a folder with no image, is a one-line error."""
    out: List[Path] = []
    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise BgbenchError(f"{path}: no image files ({', '.join(IMAGE_SUFFIXES)}) in this folder")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise BgbenchError(f"{path}: no such file or folder")
    return out


def _namer(model: BgModel):
    """(index -> class name, index -> mapped class or None, what the mapping is) for this model."""
    spec = model.spec
    if spec.label_space == IMAGENET1K:
        from timm.data import ImageNetInfo
        info = ImageNetInfo()
        if getattr(model, "class_map_file", None):
            targets = class_map_entries(model.class_map_file)
            return info.index_to_description, targets.get, f"class map {model.class_map_file}"
        table = imagenet_to_in9()
        return (info.index_to_description, lambda i: IN9_FOLDERS[table[i]] if table[i] != NO_CLASS else None,
                "IN-9 (upstream's in_to_in9.json; needs IN-9's nine class folder names to apply to a dataset)")
    names = list(spec.class_names or [str(i) for i in range(spec.num_classes)])
    return (lambda i: names[i] if i < len(names) else str(i)), (lambda i: None), None


@dataclass(frozen=True)
class _Photo:
    """A photo as the feed's item (its images are read by path, never cached: a folder of photos is
    predicted once)."""

    path: Path


def predict_images(model: BgModel, paths: Sequence[str | Path], top: int = TOP, device: str = "cpu"
                   ) -> PhotoPredictions:
    """Each image's `top` classes with their probabilities (softmax of the logits) and mapped class.

    Images are fed one at a time at their own size, through the model's resize policy, so photos
    of any size and shape can be mixed; a line on stderr says when they are resized. A file that
    cannot be read is skipped with a line on stderr naming it (listed in `skipped`), as `build`
    rejects one and goes on; when no file can be read, that is one `DataError`."""
    from ..console import status
    if top < 1:
        raise BgbenchError(f"--top must be at least 1, got {top}")
    files = image_paths(paths)
    name_of, maps_to, mapping = _namer(model)
    spec = model.spec
    model = model.to(device).eval()
    result = PhotoPredictions(spec.name, model_label(spec.name, spec.to_dict()), spec.label_space, mapping)
    said = set()

    def skipped(items, error) -> None:
        status(f"skipped: {error}")
        result.skipped.append({"path": str(items[0].path), "error": str(error)})

    photos = Images.of(Pixels([_Photo(Path(p)) for p in files]), 1)  # decoded by path, as it is
    with torch.inference_mode():  # one image a batch: photos of any size and shape can be mixed
        for _, batch in batches(photos, device=device, skip=skipped):
            path, hw = batch.items[0].path, tuple(batch.x.shape[-2:])
            note = size_note(spec.name, spec.input_size, spec.resize, hw, "init_seed" in (spec.extra or {}),
                             spec.interpolation)
            if note and note not in said:
                said.add(note)
                status(note.replace("; recorded in the run", ""))  # predict records nothing
            probs = torch.softmax(model(batch.x).float(), dim=1)[0]
            values, indices = probs.topk(min(top, probs.numel()))
            rows = [{"index": int(i), "name": name_of(int(i)), "probability": float(v), "maps_to": maps_to(int(i))}
                    for v, i in zip(values, indices)]
            result.images.append(PhotoPrediction(str(path), hw, tuple(model.net_input_hw(hw)), rows,
                                                 rows[0]["maps_to"] if mapping else None))
    if not result.images:
        first = result.skipped[0]["error"]
        raise DataError(first if len(files) == 1 else f"none of the {len(files)} images could be read (first: {first})")
    return result
