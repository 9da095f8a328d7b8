"""Group datasets generated in the tests, in the layouts the literature releases them in:
Waterbirds' (Sagawa et al. 2020: `metadata.csv` with img_filename, y, split, place and one folder
per CUB bird species; with `release=True` inside WILDS' `waterbirds_v1.0/` beside its
`RELEASE_v1.0.txt`) and a generic `groups.csv` (image, class, group[, split]).

The images are Synthetic-9 drawings: the bird is Synthetic-9's class 0 or 1 (its shape and hue),
the place the background texture family 0 or 1, so (bird, place) groups are what a model can
actually confuse.
"""
import csv
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
from PIL import Image

from bgbench.data.synthetic import draw_sample

#: Waterbirds' folders are CUB species, by its y (0 landbird, 1 waterbird: Sagawa et al. count
#: albatrosses, fulmars and mergansers among the water birds); two per bird are enough for the layout.
SPECIES = {0: ("042.Vermilion_Flycatcher", "094.White_breasted_Nuthatch"),
           1: ("001.Black_footed_Albatross", "089.Hooded_Merganser")}
SPLIT_CODES = {"train": 0, "val": 1, "test": 2}
#: WILDS' folder of the release under its root_dir, and the file that marks a finished download.
RELEASE_FOLDER, RELEASE_FILE = "waterbirds_v1.0", "RELEASE_v1.0.txt"


def waterbirds_tree(root: Path, counts: Dict[str, Dict[Tuple[int, int], int]], size: int = 32,
                    seed: int = 0, release: bool = False) -> Path:
    """`root/metadata.csv` and its JPEGs: counts[split][(y, place)] images of each group and split;
    with `release`, in `root/waterbirds_v1.0/` beside `RELEASE_v1.0.txt`. Returns root."""
    top = Path(root)
    root = top / RELEASE_FOLDER if release else top
    root.mkdir(parents=True, exist_ok=True)
    if release:
        (root / RELEASE_FILE).write_text("v1.0\n")
    rng = np.random.default_rng(seed)
    rows, n = [], 0
    for split, groups in counts.items():
        for (y, place), k in groups.items():
            for _ in range(k):
                folder = SPECIES[y][n % 2]
                name = f"{folder}/{folder.split('.')[1]}_{n:04d}.jpg"
                sample = draw_sample(y, size, 1.0, rng, family=place)
                (root / folder).mkdir(parents=True, exist_ok=True)
                Image.fromarray(sample.image).save(root / name, quality=90)
                rows.append({"img_id": n + 1, "img_filename": name, "y": y, "split": SPLIT_CODES[split],
                             "place": place, "place_filename": f"/l/lake/natural/{n:08d}.jpg"})
                n += 1
    _write_csv(root, "metadata.csv", rows)
    return top


def groups_tree(root: Path, counts: Dict[Tuple[int, int], int], size: int = 32, seed: int = 0,
                split: str = "") -> Path:
    """`root/groups.csv` and PNGs: counts[(class, family)] images of Synthetic-9 class `class` on
    texture family `family`, named classes c<class> and groups '<class> on <family>'. With
    `split`, a split column (every row in it). Returns root."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    rows, n = [], 0
    for (label, family), k in counts.items():
        for _ in range(k):
            name = f"img/{n:04d}.png"
            (root / "img").mkdir(parents=True, exist_ok=True)
            Image.fromarray(draw_sample(label, size, 1.0, rng, family=family).image).save(root / name)
            rows.append({"image": name, "class": f"c{label}", "group": f"c{label} on f{family}",
                         **({"split": split} if split else {})})
            n += 1
    return _write_csv(root, "groups.csv", rows)


def _write_csv(root: Path, name: str, rows: list) -> Path:
    """`root/name` with the rows' keys as its header; returns root."""
    with open(root / name, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return root
