"""Worst-group accuracy of a stored eval run (I/O): its predictions from the store, each image's
group from its dataset: on IN-9-layout data, a mixed image's background class from the manifest;
on a group dataset (a groups.csv, Waterbirds' metadata.csv), the file's groups; on Spawrious, each
image's (breed, location) at the run's split."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from ...data.groups import find_group_file, group_layout
from ...data.manifest import read_backgrounds
from ...data.spawrious import find_spawrious, spawrious_layout
from ...data.waterbirds import find_waterbirds, waterbirds_layout
from ...errors import BgbenchError
from ...probing.tables import stored_table
from ..common.groups import MIN_IMAGES, GroupAccuracy, group_accuracy
from .config import MIXED


def worst_group(store, run_id: int, variant: Optional[str] = None, data: Optional[str | Path] = None,
                mapping: Optional[str] = None, min_images: int = MIN_IMAGES) -> GroupAccuracy:
    """Per-group accuracy of eval run `run_id` on `variant`, its worst group and the mean over
    groups; `data`: the dataset (default: the run's own). A group is (class, background class) of
    a mixed variant (default mixed_rand), or a group dataset's own group (variant original)."""
    table = stored_table(store, run_id, mapping=mapping)
    root = Path(data or table.data_root or "")
    for find, layout_of in ((find_group_file, group_layout), (find_waterbirds, waterbirds_layout),
                            (find_spawrious, spawrious_layout)):  # a group dataset: its own groups
        found = find(root)
        if found is not None:
            return _own_groups(table, lambda: layout_of(found, table.split), variant, min_images)
    variant = variant or "mixed_rand"
    if variant not in MIXED:
        raise BgbenchError(f"--variant {variant}: groups are (class, background class), recorded for the mixed "
                           f"variants only ({', '.join(MIXED)})")
    table.require([variant], "worst-group accuracy")
    backgrounds = read_backgrounds(root, table.split, variant)
    if backgrounds is None:
        raise BgbenchError(f"{root}: no manifest.csv with the background class of each {variant} image (datasets "
                           f"written by `bgbench synth` or `bgbench build` have one); name the dataset with --data")
    v = table.variants[variant]
    name = (lambda i: table.classes[i]) if table.classes else str
    groups = {i: (name(int(y)), backgrounds[i]) for i, y in zip(v.image_ids, v.labels) if i in backgrounds}
    return _accuracy(table, variant, groups, min_images, lambda n: f"{root}/manifest.csv has no background for {n} "
                     f"of the {variant} images of {table.name}")


def _own_groups(table, read_layout, variant: Optional[str], min_images: int) -> GroupAccuracy:
    """The groups of a group dataset's eval run (a group file's, Spawrious'), from its layout at the
    run's split (`read_layout()`)."""
    layout = read_layout()
    if variant not in (None, "original"):
        raise BgbenchError(f"{layout.root} is {layout.described()}: its one variant is original")
    table.require(["original"], "worst-group accuracy")
    return _accuracy(table, "original", layout.groups, min_images, lambda n: f"{layout.root} "
                     f"({layout.described()}) has no group for {n} images of {table.name} at split {table.split}")


def _accuracy(table, variant: str, groups, min_images: int, lacking) -> GroupAccuracy:
    """The accuracy per group of the run's `variant`, each image's group from `groups`; an image
    without one is an error, `lacking(how many)` its words."""
    v = table.variants[variant]
    missing = [i for i in v.image_ids if i not in groups]
    if missing:
        raise BgbenchError(f"{lacking(len(missing))} (first: {missing[0]}): is it the dataset the run evaluated?")
    result = group_accuracy(np.asarray(v.preds) == np.asarray(v.labels), [groups[i] for i in v.image_ids],
                            variant=variant, min_images=min_images)
    result.run_id = table.run_id
    return result
