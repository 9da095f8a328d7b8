"""Class maps: how a 1000-class ImageNet model's outputs become a dataset's labels.

A class map sends each ImageNet-1k class index to a dataset label, or to -1 (no class: a
prediction there is always wrong). Which one a run uses depends on the dataset:

- IN-9's class folders: upstream's `in_to_in9.json` (`classes.imagenet_to_in9`), the default;
- ImageNet-1k's own 1000 wnids as class folders in index order (`bgbench build --preset full-in`,
  ImageNet's val itself): the identity, so a 1000-class model is scored on its own labels with no mapping;
- some of ImageNet's wnids as class folders (ImageNet-R's 200): each folder is its wnid's class,
  the other 800 classes map to none;
- RIVAL10's classes: RIVAL10's own tables (`rival10_label_mappings.json`: ImageNet class name →
  [RIVAL10 class, label]; `rival10_wnid_to_class.json`: WordNet id → ImageNet class name): each
  RIVAL10 class is the set of ImageNet classes whose names the first table lists (two per class,
  20 in all). A WordNet id's index is its position among the 1000 sorted ids, ImageNet-1k's order;
- ImageNet-D's 113 class folders: ImageNet-D's own table (`imagenet_d/imgnet_d2imgnet_id.txt`: class
  folder → the ImageNet indices that count as it, one to three each, no index twice), as its
  `evaluate_imagenet_models.py` scores a 1000-class model: right when the top-1 ImageNet class is one
  of the folder's (its `pred.eq(target[k])` summed over the folder's indices). The labels are
  ImageNet-D's own indices (`imgnet_d_dir2imgnet_d_id.txt`, the folders in sorted order);
- any dataset: a JSON file (`--class-map FILE.json`) `{"<ImageNet index>": "<class folder>", ...}`.

A run that used any map but IN-9's records it in its config (`to_config`), so stored 1000-class
outputs can be re-decided later with the same map. Sources of the tables: `resources/SOURCES.md`.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple


from .classes import IMAGENET1K, IMAGENET_CLASSES, IN9_FOLDERS, NO_CLASS, ClassMap, imagenet_to_in9
from .errors import BgbenchError

IN9 = "in9"
RIVAL10 = "rival10"
WNIDS = "imagenet-wnids"
IMAGENET_D = "imagenet-d"


def _map(name: str, pairs, num_classes: int) -> ClassMap:
    """The map sending each (ImageNet index, label) of `pairs` to its label and every other index to none."""
    table = dict(pairs)
    return ClassMap(name, tuple(table.get(i, NO_CLASS) for i in range(IMAGENET_CLASSES)), num_classes)


def _resource(name: str) -> dict:
    return json.loads(files("bgbench").joinpath(f"resources/{name}").read_text())


@lru_cache(maxsize=1)
def rival10_tables() -> Tuple[Tuple[str, ...], Dict[str, int]]:
    """(RIVAL10's class names in label order, WordNet id -> RIVAL10 label of its 20 ImageNet classes)."""
    mappings = _resource("rival10_label_mappings.json")  # ImageNet class name -> [class, label]
    wnid_to_name = _resource("rival10_wnid_to_class.json")
    name_to_wnid = {name: wnid for wnid, name in wnid_to_name.items()}
    names = {int(label): cls for cls, label in mappings.values()}
    return tuple(names[k] for k in sorted(names)), {name_to_wnid[n]: int(label) for n, (_, label) in mappings.items()}


def rival10_classes() -> Tuple[str, ...]:
    """('truck', 'car', 'plane', ...): RIVAL10's 10 classes, position = label."""
    return rival10_tables()[0]


@lru_cache(maxsize=1)
def imagenet_wnids() -> Tuple[str, ...]:
    """The 1000 ImageNet-1k WordNet ids in class-index order (sorted, as ILSVRC numbers them)."""
    return tuple(sorted(_resource("rival10_wnid_to_class.json")))


@lru_cache(maxsize=1)
def imagenet_d_tables() -> Tuple[Tuple[str, ...], Dict[str, Tuple[int, ...]]]:
    """(ImageNet-D's 113 class folders in label order, class folder -> its ImageNet indices), from
    ImageNet-D's two files (`resources/imagenet_d/`, verbatim from its `preprocessing/`)."""
    to_imagenet = _resource("imagenet_d/imgnet_d2imgnet_id.txt")
    to_label = _resource("imagenet_d/imgnet_d_dir2imgnet_d_id.txt")
    classes = tuple(sorted(to_label, key=lambda c: int(to_label[c][0])))
    return classes, {c: tuple(int(i) for i in to_imagenet[c]) for c in classes}


def imagenet_d_classes() -> Tuple[str, ...]:
    """ImageNet-D's class folders ('alarm_clock', 'backpack', ...), position = ImageNet-D label."""
    return imagenet_d_tables()[0]


def imagenet_d_class_map() -> ClassMap:
    """ImageNet-D's map: each ImageNet index its folder lists goes to that folder's label."""
    classes, indices = imagenet_d_tables()
    return _map(IMAGENET_D, ((i, label) for label, cls in enumerate(classes) for i in indices[cls]), len(classes))


def imagenet_class_map() -> ClassMap:
    """Full-IN's map: ImageNet index k is the dataset's k-th class folder (wnid k)."""
    return ClassMap(IMAGENET1K, tuple(range(IMAGENET_CLASSES)), IMAGENET_CLASSES)


def wnid_class_map(classes: Sequence[str]) -> ClassMap:
    """Class folders named by ImageNet wnids (a subset of the 1000, in any order): each is its wnid's class."""
    return _map(WNIDS, ((imagenet_wnids().index(wnid), label) for label, wnid in enumerate(classes)), len(classes))


def rival10_class_map() -> ClassMap:
    return _map(RIVAL10, ((imagenet_wnids().index(wnid), label) for wnid, label in rival10_tables()[1].items()),
                len(rival10_classes()))


def class_map_entries(path: str | Path) -> Dict[int, str]:
    """A `--class-map` file read and checked on its own: {ImageNet index (0-999): class folder}.
    Which folders exist is the dataset's to say (`class_map_from_file`)."""
    path = Path(path).expanduser()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BgbenchError(f"--class-map {path}: cannot read it as JSON ({str(e).strip() or type(e).__name__})"
                           ) from None
    if not isinstance(doc, dict) or not doc:
        raise BgbenchError(f"--class-map {path}: expected a JSON object {{\"<ImageNet index>\": \"<class folder>\"}}")
    out: Dict[int, str] = {}
    for key, folder in doc.items():
        try:
            index = int(key)
        except ValueError:
            index = -1
        if not 0 <= index < IMAGENET_CLASSES or str(index) != str(key).strip() or not isinstance(folder, str):
            raise BgbenchError(f"--class-map {path}: {key!r}: {folder!r} is not an ImageNet class index (0-999) and "
                               f"a class folder")
        out[index] = folder
    return out


def class_map_from_file(path: str | Path, classes: Sequence[str]) -> ClassMap:
    """A `--class-map` file: a JSON object {ImageNet index (0-999): class folder of this dataset}."""
    path = Path(path).expanduser()
    position = {c: k for k, c in enumerate(classes)}
    entries = class_map_entries(path)
    for index, folder in entries.items():
        if folder not in position:
            raise BgbenchError(f"--class-map {path}: ImageNet class {index} maps to {folder!r}, which is not a class "
                               f"of this dataset ({', '.join(classes)})")
    return _map(f"file:{path.resolve()}", ((i, position[f]) for i, f in entries.items()), len(classes))


def resolve_class_map(classes: Sequence[str], class_map: "str | Path | ClassMap | None" = None
                      ) -> Optional[ClassMap]:
    """The class map for a dataset with these classes: the one given (a ClassMap or a file), else
    IN-9's, RIVAL10's, ImageNet-1k's own (the identity), ImageNet-D's or some of ImageNet's wnids' by
    the class names;
    None when there is none."""
    if isinstance(class_map, ClassMap):
        if class_map.num_classes != len(classes):
            raise BgbenchError(f"class map {class_map.name} has {class_map.num_classes} classes, the dataset "
                               f"{len(classes)}")
        return class_map
    if class_map is not None:
        return class_map_from_file(class_map, classes)
    builtin = {IN9_FOLDERS: lambda: ClassMap(IN9, tuple(int(v) for v in imagenet_to_in9()), len(IN9_FOLDERS)),
               rival10_classes(): rival10_class_map, imagenet_wnids(): imagenet_class_map,
               imagenet_d_classes(): imagenet_d_class_map}
    if tuple(classes) in builtin:
        return builtin[tuple(classes)]()
    if classes and set(classes) <= set(imagenet_wnids()) and len(set(classes)) == len(classes):
        return wnid_class_map(classes)
    return None
