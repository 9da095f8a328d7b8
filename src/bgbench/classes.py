"""IN-9 classes and the ImageNet-1k → dataset decision mappings.

The 1000→9 table is upstream's `in_to_in9.json` (370 classes map to an IN-9 class, 630 to none),
shipped as package data. A decision mapping turns a model's 1000-way output into dataset
predictions through a class map (`ClassMap`: IN-9's table by default; RIVAL10's, ImageNet-D's and
`--class-map` files are built in `class_maps`); a prediction that maps to none is -1 and therefore
always wrong.
"""
from __future__ import annotations

import enum
import json
from functools import lru_cache
from importlib.resources import files
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    import torch


IN9_FOLDERS = (
    "00_dog",
    "01_bird",
    "02_wheeled vehicle",
    "03_reptile",
    "04_carnivore",
    "05_insect",
    "06_musical instrument",
    "07_primate",
    "08_fish",
)
NO_CLASS = -1
IMAGENET_CLASSES = 1000
#: A model's label space: ImageNet's 1000 classes (mapped to a dataset's through a class map), or the
#: dataset's own classes. Spelled once here; specs, runs and exports store these strings.
IMAGENET1K = "imagenet1k"
DATASET = "dataset"


@dataclass(frozen=True)
class ClassMap:
    """ImageNet index -> dataset label (-1: none), for a dataset of `num_classes` classes."""

    name: str  # 'in9', 'rival10' or 'file:<path>'
    table: Tuple[int, ...]
    num_classes: int

    def array(self) -> np.ndarray:
        return np.asarray(self.table, dtype=np.int64)

    def members(self) -> Dict[int, List[int]]:
        """label -> the ImageNet indices that map to it."""
        out: Dict[int, List[int]] = {c: [] for c in range(self.num_classes)}
        for index, label in enumerate(self.table):
            if label >= 0:
                out[label].append(index)
        return out

    def to_config(self) -> dict:
        """What a run records: the map's name and, per label, its ImageNet indices."""
        return {"name": self.name, "num_classes": self.num_classes,
                "imagenet_classes": {str(c): idx for c, idx in self.members().items()}}

    @classmethod
    def from_config(cls, doc: Optional[dict]) -> Optional["ClassMap"]:
        """The map a run recorded (None: the run used IN-9's)."""
        if not doc:
            return None
        table = np.full(IMAGENET_CLASSES, NO_CLASS, dtype=np.int64)
        for label, indices in doc["imagenet_classes"].items():
            table[np.asarray(indices, dtype=np.int64)] = int(label)
        return cls(doc["name"], tuple(int(v) for v in table), int(doc["num_classes"]))


class Mapping(enum.StrEnum):
    """How a 1000-class output becomes an IN-9 prediction."""

    ARGMAX = "argmax"  # the paper's rule: argmax over 1000, then the table
    SUPERCLASS = "superclass"  # argmax over the 9 sums of class probabilities


@lru_cache(maxsize=1)
def imagenet_to_in9() -> np.ndarray:
    """The upstream table as an int64 array of length 1000 (values 0..8, or -1 for none)."""
    raw = json.loads(files("bgbench").joinpath("resources/in_to_in9.json").read_text())
    table = np.full(1000, NO_CLASS, dtype=np.int64)
    for k, v in raw.items():
        table[int(k)] = int(v)
    return table


@lru_cache(maxsize=None)
def imagenet_to_in9_on(device: str) -> "torch.Tensor":
    """`imagenet_to_in9` as a tensor on `device`, made once per device: copied from host memory at
    every batch, it would make the host wait for the card each time."""
    import torch
    return torch.as_tensor(imagenet_to_in9(), device=device)


def _table(class_map: Optional["ClassMap"], device) -> tuple:
    """(ImageNet index -> label tensor, number of labels) of a class map; IN-9's when None."""
    import torch
    if class_map is None:
        return imagenet_to_in9_on(str(device)), len(IN9_FOLDERS)
    return torch.as_tensor(class_map.array(), device=device), class_map.num_classes


def map_logits(logits: "torch.Tensor", mapping: Mapping | str = Mapping.ARGMAX,
               class_map: Optional["ClassMap"] = None) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Map 1000-way logits to dataset predictions and confidences.

    Args:
        class_map: the dataset's class map (`bgbench.class_maps`); None is IN-9's.

    Returns:
        (pred, conf): pred a dataset label, or -1 where the argmax class maps to none; conf is the
        probability mass the decision rests on.
    """
    mapping_ = Mapping(mapping)
    table, _ = _table(class_map, logits.device)
    probs = logits.float().softmax(dim=1)
    if mapping_ is Mapping.ARGMAX:
        conf, top = probs.max(dim=1)
        return table[top], conf
    conf, pred = superclass_sums(probs, class_map).max(dim=1)
    return pred, conf


def restricted_logits(logits: "torch.Tensor", class_map: "ClassMap") -> "torch.Tensor":
    """Logits where only the ImageNet classes that map to a dataset label compete: every other
    class is pushed to the lowest finite value, so the argmax (and the `argmax` mapping after it) is
    the argmax over the dataset's own classes, never a class with no label.

    This is ImageNet-R's and Whac-A-Mole's `map_prediction` for ImageNet-R, ImageNet-200 and
    ImageNet-A (`output[:, mask].argmax(1)`): a 200-class subset is scored among its 200 classes.
    """
    import torch
    table, _ = _table(class_map, logits.device)
    return logits.masked_fill(table < 0, torch.finfo(logits.dtype).min)


def superclass_sums(probs: "torch.Tensor", class_map: Optional["ClassMap"] = None) -> "torch.Tensor":
    """(N, 1000) probabilities -> (N, C) probability mass of each dataset class (IN-9's when None)."""
    import torch
    table, n = _table(class_map, probs.device)
    valid = table >= 0
    sums = torch.zeros(probs.shape[0], n, device=probs.device, dtype=probs.dtype)
    sums.index_add_(1, table[valid], probs[:, valid])
    return sums


def stores_sums(class_map: Optional["ClassMap"]) -> bool:
    """Whether a run keeps each dataset class's probability mass per image: not under a map with
    as many classes as ImageNet (Full-IN's identity), where the masses are the 1000 probabilities
    themselves, the superclass rule is the argmax, and 1000 numbers per image would bloat the store."""
    return class_map is None or class_map.num_classes < 1000


def class_name_mismatch(model_classes: Optional[Sequence[str]], data_classes: Sequence[str]) -> Optional[dict]:
    """The class folders a model was trained on vs a dataset's, where both are known and differ.

    Label i means "the i-th class folder", so a model trained on `08_bar` and evaluated where that
    folder is `08_long bar` is scored without complaint: callers warn and record this instead.
    Returns None when the model's classes are unknown or equal; else the pairs that differ.
    """
    if not model_classes or tuple(model_classes) == tuple(data_classes):
        return None
    pairs = [[m, d] for m, d in zip(model_classes, data_classes) if m != d]
    return {"model": list(model_classes), "data": list(data_classes), "differ": pairs}


def mapping_field():
    """The `mapping` field of every config that decides a 1000-class model's outputs, declared once:
    its default, its `--mapping` flag and its help. The config's `__post_init__` makes the value a
    `Mapping` (`checks.member`), so a string from the CLI, the API or a study file is converted at
    the edge."""
    from dataclasses import field

    from .options import flag
    return field(default=Mapping.ARGMAX, metadata=flag(
        "--mapping", "1000-class models: 'argmax' (the paper's rule) or 'superclass' (sum of probabilities) "
        "(default %(default)s)", choices=[m.value for m in Mapping]))
