"""Waterbirds (Sagawa et al., ICLR 2020), read as the WILDS release lays it out and as `wilds`'
`WaterbirdsDataset` reads it (`wilds/datasets/waterbirds_dataset.py`).

    ROOT/waterbirds_v1.0/metadata.csv                      img_id, img_filename, y, split, place, ...
    ROOT/waterbirds_v1.0/RELEASE_v1.0.txt                  (WILDS' mark of a finished download)
    ROOT/waterbirds_v1.0/<CUB species folder>/<image>.jpg  e.g. 001.Black_footed_Albatross/...

`--data` is ROOT (what `WaterbirdsDataset(root_dir=ROOT)` takes) or the `waterbirds_v1.0/` folder
itself, and the dataset's root is ROOT either way (as Spawrious' is the folder holding
`spawrious224/`); or any folder holding such a `metadata.csv` (the folder Sagawa et al.'s script
writes), which is then the root.
`img_filename` is relative to the folder holding `metadata.csv` (`get_input` joins the two); `y`
is the bird (0 landbird, 1 waterbird), `place` the background (0 land, 1 water), `split` 0/1/2
train/val/test (`split_dict`). A group is (y, place), named `waterbird on land`: the groups of its
`CombinatorialGrouper` over (background, y). The release's other columns are not read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..errors import DataError
from .groups import GroupLayout, Row, build_group_layout, image_id_of, need_columns, read_rows
from .maskless import only_original
from .facts import WATERBIRDS as KIND, WATERBIRDS_CLASSES, WATERBIRDS_PLACES

FOLDER = "waterbirds_v1.0"  # `initialize_data_dir`: '<dataset>_v<version>' under root_dir
METADATA = "metadata.csv"
COLUMNS = ("img_filename", "y", "split", "place")
CLASSES, PLACES = WATERBIRDS_CLASSES, WATERBIRDS_PLACES
SPLITS = {"train": "0", "val": "1", "test": "2"}
#: The split read when none is named: the evaluation split.
DEFAULT_SPLIT = "test"


@dataclass
class WaterbirdsLayout(GroupLayout):
    """One split of Waterbirds as a group `Layout` (variant `original`), with each image's place."""

    kind = KIND
    places: Dict[str, int] = field(default_factory=dict, repr=False)

    def described(self) -> str:
        return f"Waterbirds ({self.split})"


def find_waterbirds(data) -> Optional[Path]:
    """The metadata.csv of `data` when `data` is WILDS' root_dir (holding `waterbirds_v1.0/`) or a
    folder holding the file itself; None otherwise."""
    path = Path(data).expanduser()
    return next((p for p in (path / FOLDER / METADATA, path / METADATA) if p.is_file()), None)


def waterbirds_layout(path: Path, split: Optional[str] = None,
                      variants: Optional[Sequence[str]] = None) -> WaterbirdsLayout:
    """The images of `split` (default test) in the metadata.csv at `path`, checked: the columns are
    there, every y and place is 0 or 1 and every split code 0, 1 or 2, every image exists inside the
    folder of the file, none is named twice; each problem one line naming the file and the line."""
    only_original(path.parent, variants, "a group dataset has its images")
    rows = read_rows(path)
    need_columns(path, rows, COLUMNS)
    split = split or DEFAULT_SPLIT
    if split not in SPLITS:
        raise DataError(f"{path}: Waterbirds' splits are {', '.join(SPLITS)}, not {split!r}")
    chosen, named, places = _rows(path, rows, SPLITS[split])
    layout = build_group_layout(path, split, chosen, CLASSES, named, WaterbirdsLayout, places=places)
    if path.parent.name == FOLDER:  # the release's root is WILDS' root_dir, as Spawrious' is the folder above its own
        layout.root = path.parent.parent
    return layout


def _rows(path: Path, rows: List[Row], code: str):
    """(the rows of split `code` as (line, image, y, group), every group the file names, image id ->
    place of the rows kept)."""
    codes = set(SPLITS.values())
    chosen, named, places = [], set(), {}
    for n, r in rows:
        y, place, split = r["y"].strip(), r["place"].strip(), r["split"].strip()
        if y not in ("0", "1") or place not in ("0", "1"):
            raise DataError(f"{path} line {n}: y and place are 0 or 1, got y={y!r} place={place!r}")
        if split not in codes:  # dropping the row would shrink a split silently
            raise DataError(f"{path} line {n}: split is 0, 1 or 2 (train, val, test), got {split!r}")
        group = f"{CLASSES[int(y)]} on {PLACES[int(place)]}"
        named.add(group)
        if split == code:
            image = r["img_filename"].strip()
            chosen.append((n, image, int(y), group))
            places[image_id_of(image)] = int(place)
    return chosen, named, places
