"""Group datasets, as the spurious-correlation literature publishes them, and each image's group.

A generic `ROOT/groups.csv` with `image, class, group` (and optionally `split`): image paths
relative to ROOT, any class and group names. Waterbirds' `metadata.csv` (Sagawa et al. 2020, in
the WILDS release layout) has a reader of its own, `data.waterbirds`, built on the checks here
(`build_group_layout`).

Either becomes a `Layout` with one variant, `original`, whose classes are the file's (sorted, or
Waterbirds' own order), so every command reads it as it reads IN-9; each image's group is the
layout's `groups` (`manifest.image_groups` reads any layout's).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import DataError
from .csv_fields import allow_long_fields
from .layout import Item
from .maskless import ImagesOnlyLayout, hashed, only_original
from .facts import GROUPS

GROUPS_FILE = "groups.csv"
#: The split read when none is named: the evaluation split.
DEFAULT_SPLIT = "test"
#: A row of a group file: the line it ends on, and its fields by column name.
Row = Tuple[int, Dict[str, str]]


@dataclass
class GroupLayout(ImagesOnlyLayout):
    """A group dataset as a `Layout`: one variant (`original`), and the group of every image."""

    kind = GROUPS
    groups: Dict[str, str] = field(default_factory=dict, repr=False)
    source: str = ""  # the file the groups come from

    def described(self) -> str:
        return f"a group dataset ({self.source})"

    def fingerprint(self) -> str:
        return hashed(self, f"groups:{self.source}:{self.split}",
                            (f"{it.image_id}:{it.label}:{self.groups[it.image_id]}:{it.path.stat().st_size}"
                             for it in self._items["original"]))


def find_group_file(data) -> Optional[Path]:
    """The generic group file of `data` (`groups.csv`), or None (Waterbirds: `data.waterbirds`)."""
    path = Path(data).expanduser() / GROUPS_FILE
    return path if path.is_file() else None


def group_layout(path: Path, split: Optional[str] = None, variants: Optional[Sequence[str]] = None) -> GroupLayout:
    """The images of `split` in the groups.csv at `path`, checked as `build_group_layout` checks them."""
    only_original(path.parent, variants, "a group dataset has its images")
    split, chosen, classes, named = _generic(path, read_rows(path), split)
    return build_group_layout(path, split, chosen, classes, named, GroupLayout)


def build_group_layout(path: Path, split: str, chosen: List[tuple], classes: Tuple[str, ...], named: set,
                       cls: type, **extra) -> GroupLayout:
    """A `cls` layout of the rows `chosen` ((line, image, label, group) each) of the group file at
    `path`, checked: every image exists inside the dataset's root, no image is named twice, every
    group the file names (`named`) has images in the split; each problem one line naming the file
    (and the line). `extra`: the fields of `cls` beyond a GroupLayout's."""
    refuse_repeats(path, chosen)
    items, groups = [], {}
    for n, image, label, group in chosen:
        p = inside_root(path, n, image)
        image_id = image_id_of(image)
        items.append(Item(image_id=image_id, label=label, path=p))
        groups[image_id] = group
    if not items:
        raise DataError(f"{path}: no images in split {split!r}")
    empty = sorted(set(named) - set(groups.values()))
    if empty:  # its accuracy would be undefined, and worst-group accuracy silently the worst of the others
        raise DataError(f"{path}: group {empty[0]!r} has no images in split {split!r}"
                        + (f" (nor {len(empty) - 1} other groups)" if len(empty) > 1 else ""))
    return cls(root=path.parent, split=split, classes=classes, variants=("original",), groups=groups,
               source=path.name, _items={"original": items}, **extra)


def image_id_of(image: str) -> str:
    """The id an image is stored under: its path in the file, without its suffix."""
    return str(Path(image).with_suffix("")).replace("\\", "/")


def inside_root(path: Path, n: int, image: str) -> Path:
    """The file row `n` names, which must exist and lie inside the dataset's root once every `..`
    and symlink is resolved: a group file must never make bgbench read (and store predictions of)
    a file elsewhere, such as `../outside/secret.jpg` or an absolute path."""
    root = path.parent
    p = root / image
    if not p.resolve().is_relative_to(root.resolve()):
        raise DataError(f"{path} line {n}: {image} is outside the dataset root {root}; a group file names images "
                        f"inside its own folder")
    if not p.is_file():
        raise DataError(f"{path} line {n} names {image}, which is not under {root}")
    return p


def refuse_repeats(path: Path, chosen: List[tuple]) -> None:
    """One line naming both rows when the split read names an image twice: it would be counted
    twice (a group's n larger than its stored predictions)."""
    first: Dict[str, int] = {}
    for n, image, *_ in chosen:
        key = image_id_of(image)
        if key in first:
            raise DataError(f"{path} lines {first[key]} and {n} both name {image}; name each image once "
                            f"per split")
        first[key] = n


def training_split(data) -> Optional[str]:
    """The split a head is fitted on when none is named: train, or None (every row) for a
    groups.csv without a split column."""
    path = find_group_file(data)
    if path is not None:
        rows = read_rows(path)
        if rows and "split" not in rows[0][1]:
            return None
    return "train"


def read_rows(path: Path) -> List[Row]:
    """The file's rows, each with the line it ends on. A row with fewer or more fields than the
    header is one line naming it (csv.DictReader would fill the gap with None, or keep the rest
    under None, and the checks after it would trip over that)."""
    rows: List[Row] = []
    allow_long_fields()
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            for row in reader:
                if None in row or None in row.values():
                    raise DataError(f"{path} line {reader.line_num}: {_fields(row)} fields where the header has "
                                    f"{len(reader.fieldnames)} ({', '.join(reader.fieldnames)})")
                rows.append((reader.line_num, row))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"cannot read {path}: {e}") from None
    return rows


def _fields(row: dict) -> int:
    """How many fields a row read by csv.DictReader really had."""
    return sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or ())


def need_columns(path: Path, rows: List[Row], columns: Tuple[str, ...]) -> None:
    have = set(rows[0][1]) if rows else set()
    missing = [c for c in columns if c not in have]
    if missing or not rows:
        raise DataError(f"{path} needs the columns {', '.join(columns)} and at least one row "
                        f"(missing: {', '.join(missing) or 'rows'})")


def _generic(path: Path, rows: List[Row], split: Optional[str]):
    need_columns(path, rows, ("image", "class", "group"))
    has_split = "split" in rows[0][1]
    if split is None:
        split = DEFAULT_SPLIT if has_split else "all"
    elif not has_split:
        raise DataError(f"{path} has no split column; drop --split (all its rows are read)")
    for n, r in rows:
        if not r["image"].strip() or not r["class"].strip() or not r["group"].strip():
            raise DataError(f"{path} line {n}: image, class and group must not be empty")
    picked = [(n, r) for n, r in rows if not has_split or r["split"].strip() == split]
    classes = tuple(sorted({r["class"].strip() for _, r in rows}))
    chosen = [(n, r["image"].strip(), classes.index(r["class"].strip()), r["group"].strip()) for n, r in picked]
    return split, chosen, classes, {r["group"].strip() for _, r in rows}
