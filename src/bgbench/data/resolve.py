"""Which layout a `--data` path is: the IN-9 layout (`in9.discover`), the RIVAL10 release
(`rival10`), Hard ImageNet (`hardimagenet`), ImageNet-D's (`imagenet_d`), Spawrious' (`spawrious`),
a group file's, Waterbirds' (`waterbirds`) or ImageNet's folders. Kept apart from the readers so
that none imports another."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Tuple

from .groups import find_group_file, group_layout
from .hardimagenet import hard_imagenet_layout
from .hardimagenet_classes import WNIDS, find_hard_imagenet
from .imagenet import folder_classes
from .imagenet_folders import find_imagenet
from ..errors import DataError
from .imagenet_d import find_imagenet_d, imagenet_d_layout
from .in9 import class_dirs, discover
from .layout import IN9_VARIANTS, Layout
from .rival10 import find_rival10, rival10_layout
from .spawrious import CLASSES as SPAWRIOUS_CLASSES, find_spawrious, spawrious_layout
from .waterbirds import CLASSES as WATERBIRDS_CLASSES, find_waterbirds, waterbirds_layout
from .releases import find_release
from .salient_imagenet import find_salient_imagenet, salient_imagenet_layout
from .spurious_imagenet import find_spurious_imagenet, spurious_imagenet_layout


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
(`data.releases`: a variant per edit level, and common/counter). `split`: the split folder (default: the dataset's
    evaluation split: val for IN-9 and ImageNet, test for Waterbirds and Spawrious). `imagenet`: the
    user's ImageNet under Salient ImageNet's masks (default `$BGBENCH_IMAGENET`). `in9`: `data` must
    be an IN-9 layout (`in9.discover`), as the challenge's backgrounds are.
    """
    if isinstance(data, Layout):
        return data
    if in9:
        return discover(data, split=split or "val", variants=variants)
    found_rival10 = find_rival10(data)
    if found_rival10 is not None:
        return rival10_layout(*found_rival10, variants=variants)
    found_hard = find_hard_imagenet(data)
    if found_hard is not None:
        root, named_split = found_hard
        return hard_imagenet_layout(root, split or named_split, variants)
    found_imagenet_d = find_imagenet_d(data)
    if found_imagenet_d is not None:
        return imagenet_d_layout(found_imagenet_d, variants, split)
    found_spawrious = find_spawrious(data)
    if found_spawrious is not None:
        return spawrious_layout(found_spawrious, split, variants)
    release = find_release(data)
    if release is not None:
        return release.read(variants, split)
    found_spurious = find_spurious_imagenet(data)
    if found_spurious is not None:  # its images/timestamp.txt (data.spurious_imagenet)
        return spurious_imagenet_layout(found_spurious, variants, split)
    found_salient = find_salient_imagenet(data)
    if found_salient is not None:  # its wordnet_dict.py and class folders (data.salient_imagenet)
        return salient_imagenet_layout(found_salient, variants, split, imagenet=imagenet)
    group_file = find_group_file(data)
    if group_file is not None:
        return group_layout(group_file, split, variants)
    waterbirds = find_waterbirds(data)
    if waterbirds is not None:
        return waterbirds_layout(waterbirds, split, variants)
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
    if find_imagenet_d(data) is not None:
        from ..class_maps import imagenet_d_classes
        return imagenet_d_classes()
    if find_spawrious(data) is not None:
        return SPAWRIOUS_CLASSES
    if find_waterbirds(data) is not None:
        return WATERBIRDS_CLASSES
    if find_release(data) is not None:  # ImageNet's 1000 classes: a zero-shot head prompts ImageNet's names
        return None
    return class_folders(data, split)


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
    return folder_classes(root)
