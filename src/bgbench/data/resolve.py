"""Which layout a `--data` path is: the IN-9 layout (`in9.discover`), the RIVAL10 release
(`rival10`), Hard ImageNet (`hardimagenet`), ImageNet-D's (`imagenet_d`), Spawrious' (`spawrious`),
a group file's, Waterbirds' (`waterbirds`) or ImageNet's folders. Kept apart from the readers so
that none imports another, and each reader is imported only where its marks are (`_READERS`)."""
from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Optional, Sequence, Tuple

from ..errors import DataError
from .hardimagenet_classes import WNIDS, find_hard_imagenet
from .imagenet import ImageNetTree, imagenet_folders, imagenet_synsets
from .imagenet_folders import find_imagenet
from .in9 import class_dirs, discover
from .layout import IN9_VARIANTS, Layout


def _by_name(layout: str):
    """How most readers take what their finder found: `<module>.<layout>(found, variants=, split=)`."""
    return lambda m, found, variants, split, imagenet: getattr(m, layout)(found, variants=variants, split=split)


#: The layouts a `--data` path is recognised as, in the order they are asked: its name, what its finder
#: needs to see there (so that a reader's module is imported only where its files are: reading IN-9
#: imports none of them), its module and finder, and how its reader takes what the finder found, the
#: variants, the split and the user's ImageNet (`_by_name`, but for the three that take other
#: arguments). A finder changed must keep its marks here.
_READERS = {
    "rival10": (lambda p: any((p / d / "ordinary").is_dir() for d in ("", "test", "train")),
                "bgbench.data.rival10:find_rival10",  # its split is the one its finder found
                lambda m, found, variants, split, imagenet: m.rival10_layout(*found, variants=variants)),
    "hardimagenet": (lambda p: any((d / "meta" / f).is_file() for d in (p, p.parent)
                                   for f in ("hard_imagenet_idx.pkl", "idx_to_wnid.pkl")),
                     "bgbench.data.hardimagenet:find_hard_imagenet",
                     lambda m, found, variants, split, imagenet: m.hard_imagenet_layout(found[0], split or found[1],
                                                                                        variants)),
    "imagenet_d": (lambda p: any((p / n).is_dir() for n in ("background", "texture", "material")),
                   "bgbench.data.imagenet_d:find_imagenet_d", _by_name("imagenet_d_layout")),
    "spawrious": (lambda p: (p / "spawrious224").is_dir() or p.name == "spawrious224",
                  "bgbench.data.spawrious:find_spawrious", _by_name("spawrious_layout")),
    "imagenet_e": (lambda p: (p / "labels.txt").is_file(),
                   "bgbench.data.imagenet_e:find_imagenet_e", _by_name("imagenet_e_layout")),
    "counteranimal": (lambda p: any(f.is_dir() and not (f / "original").is_dir()  # its finder lists the folder
                                    for f in (p, p / "LAION-final", p / "counteranimal" / "LAION-final")),
                      "bgbench.data.counteranimal:find_counteranimal", _by_name("counteranimal_layout")),
    "spurious_imagenet": (lambda p: (p / "images" / "timestamp.txt").is_file() or (p / "timestamp.txt").is_file(),
                          "bgbench.data.spurious_imagenet:find_spurious_imagenet",
                          _by_name("spurious_imagenet_layout")),
    "salient_imagenet": (lambda p: (p / "wordnet_dict.py").is_file(),
                         "bgbench.data.salient_imagenet:find_salient_imagenet",
                         lambda m, found, variants, split, imagenet: m.salient_imagenet_layout(
                             found, variants=variants, split=split, imagenet=imagenet)),
    "groups": (lambda p: (p / "groups.csv").is_file(),
               "bgbench.data.groups:find_group_file", _by_name("group_layout")),
    "waterbirds": (lambda p: (p / "waterbirds_v1.0" / "metadata.csv").is_file() or (p / "metadata.csv").is_file(),
                   "bgbench.data.waterbirds:find_waterbirds", _by_name("waterbirds_layout")),
}


def _found(data, *names: str):
    """(name, the reader's module, what its finder found, how its reader is called) for the first
    layout of `names` (in that order; default every one of `_READERS`, in its order) that `data` is,
    or None."""
    path = Path(data).expanduser()
    for name in names or _READERS:
        marked, finder, read = _READERS[name]
        if marked(path):
            module, attr = finder.split(":")
            reader = import_module(module)
            found = getattr(reader, attr)(data)
            if found is not None:
                return name, reader, found, read
    return None


def resolve_layout(data: "str | Path | Layout", variants: Optional[Sequence[str]] = None,
                   split: Optional[str] = None, *, imagenet: "str | Path | None" = None, in9: bool = False) -> Layout:
    """The dataset's layout with the requested variants.

    Default: the IN-9 variants present; when none is present besides `original` (an edit
    folder from `bgbench edit`, a plain dataset), every variant folder, `original` first. A
    RIVAL10 root (or its `train`/`test` folder) is read as RIVAL10 (`data.rival10`), whose one
    variant is `original`, and a Hard ImageNet root (or its `val`/`train` folder) as Hard ImageNet's
    masks over the user's ImageNet (`data.hardimagenet`). A root with a `groups.csv` is read as a
    group dataset (`data.groups`), one variant too, and so is Waterbirds (`data.waterbirds`: WILDS'
    root_dir holding `waterbirds_v1.0/metadata.csv`, or the folder of the file), and so are
    ImageNet's own images and folders of ImageNet classes (`data.imagenet_folders`: ImageNet val, Stylized-ImageNet,
    ImageNet-R). The ImageNet-D release is read as its code reads it (`data.imagenet_d`: one
    variant per nuisance, no split), and so is Spawrious' (`data.spawrious`: one variant, a split per
    challenge and part, such as o2o_easy-test); the ImageNet-E and CounterAnimal releases as laid out
    (`data.imagenet_e`, `data.counteranimal`: a variant per edit level, and common/counter). `split`:
    the split folder (default: the dataset's evaluation split: val for IN-9 and ImageNet, test for Waterbirds and Spawrious). `imagenet`: the
    user's ImageNet under Salient ImageNet's masks (default `$BGBENCH_IMAGENET`). `in9`: `data` must
    be an IN-9 layout (`in9.discover`), as the challenge's backgrounds are.
    """
    if isinstance(data, Layout):
        return data
    if in9:
        return discover(data, split=split or "val", variants=variants)
    found = _found(data)
    if found is not None:
        _, reader, found, read = found
        return read(reader, found, variants, split, imagenet)
    imagenet = find_imagenet(data, split)
    if imagenet is not None:
        if variants and list(variants) != ["original"]:
            raise DataError(f"{imagenet.root} holds ImageNet's images, one variant (original); no "
                            f"{', '.join(v for v in variants if v != 'original')}")
        return imagenet
    split = split or "val"
    if variants:
        return discover(data, split=split, variants=list(variants))
    found = discover(data, split=split)
    present = [v for v in IN9_VARIANTS if v in found.variants]
    if len(present) <= 1:  # no IN-9 variants beside original (e.g. `bgbench edit` output): every folder
        present = ["original", *[v for v in found.variants if v != "original"]] if "original" in found.variants \
            else list(found.variants)
    return discover(data, split=split, variants=present)


def dataset_classes(data, split: str = "val") -> Optional[Tuple[str, ...]]:
    """The classes of a dataset, cheaply (no image listed), for a model that takes them from the data
    (a zero-shot head, a random-init network sized to them): ImageNet-D's 113 folders, Spawrious'
    four breeds, Waterbirds' two birds, else the class folders `class_folders` finds; None when none
    can be read, and for the ImageNet-E and CounterAnimal releases, whose classes are ImageNet's own
    1000."""
    if data is None or isinstance(data, Layout):
        return class_folders(data, split)
    found = _found(data, "imagenet_d", "spawrious", "waterbirds", "imagenet_e", "counteranimal")
    if found is None:
        return class_folders(data, split)
    name, reader = found[:2]
    if name == "imagenet_d":
        return reader.imagenet_d_classes()
    return reader.CLASSES if name in ("spawrious", "waterbirds") else None  # the releases: ImageNet's 1000 classes



def class_folders(data, split: str = "val") -> Optional[Tuple[str, ...]]:
    """The class folders of a dataset (a `Layout` or a root), cheaply, or None when they cannot be read
    here (the job that reads the data then says what is wrong with it)."""
    if data is None:
        return None
    if isinstance(data, Layout):
        return data.classes
    root = Path(data).expanduser()
    try:
        if find_hard_imagenet(root) is not None:
            return WNIDS
    except DataError:
        return None
    for variant in ("original", *IN9_VARIANTS[1:]):
        if (root / variant / split).is_dir():
            return class_dirs(root / variant / split) or None
    try:
        found = imagenet_folders(root)
    except DataError:
        return None
    return imagenet_synsets() if isinstance(found, ImageNetTree) else found
