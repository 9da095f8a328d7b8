"""A small Spurious ImageNet release, written in its layout (no download).

    ROOT/images/timestamp.txt                              an integer, the release's version
    ROOT/images/spurious_class_<index>_comp_<feature>/     one folder per spurious feature, named as
                                                           `SpuriousDataset` parses it (class: third
                                                           '_' field, feature: the last)

Images are 224 x 224 PNGs (the loader's Resize(224) keeps them as they are), each with one channel
flat so that channel means differ from image to image.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence, Tuple

import numpy as np
from PIL import Image

TIMESTAMP = "1681916408"


def write_release(root: Path, features: Sequence[Tuple[int, int, int]], seed: int = 3) -> Path:
    """`root` holding `images/` with a folder per (class index, feature, images) of `features`."""
    rng = np.random.default_rng(seed)
    (root / "images").mkdir(parents=True)
    (root / "images" / "timestamp.txt").write_text(TIMESTAMP + "\n")
    for index, component, n in features:
        folder = root / "images" / f"spurious_class_{index}_comp_{component}"
        folder.mkdir()
        for k in range(n):
            img = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
            img[:, :, k % 3] = rng.integers(0, 256)
            Image.fromarray(img).save(folder / f"{index}_{component}_{k}.png")
    return root
