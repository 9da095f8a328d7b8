"""Worst-group accuracy of a stored eval run (I/O): its predictions on a mixed variant from the
store, each image's background class from its dataset's manifest."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from ...data.manifest import read_backgrounds
from ...errors import BgbenchError
from ...probing.tables import stored_table
from ...evaluation.groups import MIN_IMAGES, GroupAccuracy, group_accuracy

#: The mixed variants whose images record a background class.
MIXED = ("mixed_rand", "mixed_next", "mixed_same")


def worst_group(store, run_id: int, variant: str = "mixed_rand", data: Optional[str | Path] = None,
                mapping: Optional[str] = None, min_images: int = MIN_IMAGES) -> GroupAccuracy:
    """Per-(class, background class) accuracy of eval run `run_id` on `variant`, its worst group
    and the mean over groups; `data`: where the manifest is (default: the run's own dataset)."""
    if variant not in MIXED:
        raise BgbenchError(f"--variant {variant}: groups are (class, background class), recorded for the mixed "
                           f"variants only ({', '.join(MIXED)})")
    table = stored_table(store, run_id, mapping=mapping, variants=[variant])
    table.require([variant], "worst-group accuracy")
    root = Path(data or table.data_root or "")
    backgrounds = read_backgrounds(root, table.split, variant)
    if backgrounds is None:
        raise BgbenchError(f"{root}: no manifest.csv with the background class of each {variant} image (datasets "
                           f"written by `bgbench synth` or `bgbench build` have one); name the dataset with --data")
    v = table.variants[variant]
    missing = [i for i in v.image_ids if i not in backgrounds]
    if missing:
        raise BgbenchError(f"{root}/manifest.csv has no background for {len(missing)} of the {variant} images of "
                           f"{table.name} (first: {missing[0]}): is it the dataset the run evaluated?")
    name = (lambda i: table.classes[i]) if table.classes else str
    result = group_accuracy(np.asarray(v.preds) == np.asarray(v.labels),
                            [(name(int(y)), backgrounds[i]) for i, y in zip(v.image_ids, v.labels)],
                            variant=variant, min_images=min_images)
    result.run_id = table.run_id
    return result
