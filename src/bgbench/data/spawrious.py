"""The Spawrious release (Lynch et al., 2023; aengusl/spawrious), read as its `spawrious/torch.py` reads it.

    ROOT/spawrious224/{0,1,domain_adaptation_ds}/<location>/<breed>/<image>

Four dog breeds (its `class_list`, the label order) on six locations (`locations_list`). A
challenge (o2o_easy ... m2m_hard) is a choice of (breed, location) folders for its training and
test sets, made by `_get_combinations` and `build_combination` (copied here as data) and read by
`SpawriousBenchmark._create_data_list`:
- one-to-one (o2o): each breed's training images are 97% (folder 0) and 87% (folder 1) of 3168 from
  its own location, the rest from a filler location shared by all breeds; its test images are every
  image of another location, from folders 0 and 1;
- many-to-many (m2m): each breed has two training locations (3168 images each, folder 0) and two
  test locations (folder 0), swapped between breed pairs.
A folder's images are its files ending in .png, .jpg or .jpeg, in the order `os.listdir` gives
them, cut to the first `limit` (`CustomImageFolder`): which images a limit keeps is the file system's
directory order, as in the source.

A split is '<challenge>-<part>' (`o2o_easy-test`, `m2m_hard-train`); a challenge alone is its test
set, and `train` or `test` alone is that part of the default challenge: m2m_hard (the `--dataset`
default of the repository's `example.py`) when the tree holds its folders, else the first challenge
it holds, which the layout says (`SpawriousLayout.fallback`, a line the eval command prints and puts
in its JSON). Every image's group is (breed, location), 'bulldog on desert': the source's
`(class_label, location_label)`. Its own evaluation (`example.py`, `evaluate`) is the accuracy over
the whole test set; per-group and worst-group accuracies are bgbench's groups, over its labels.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import DataError
from .groups import GroupLayout
from .inside import RootGuard
from .layout import Item, utf8_name
from .maskless import only_original
from .facts import SPAWRIOUS

FOLDER = "spawrious224"
#: `SpawriousBenchmark.class_list` (the labels) and `locations_list`.
CLASSES = ("bulldog", "corgi", "dachshund", "labrador")
LOCATIONS = ("desert", "jungle", "dirt", "mountain", "snow", "beach")
#: The release's dataset folders (`_check_images_availability`'s "entire_dataset").
DATASET_FOLDERS = ("0", "1", "domain_adaptation_ds")
#: `_get_combinations`: challenge -> (training locations, test locations, filler), one per breed in
#: build_combination's breed order (bulldog, dachshund, labrador, corgi).
COMBINATIONS = {
    "o2o_easy": (("desert", "jungle", "dirt", "snow"), ("dirt", "snow", "desert", "jungle"), "beach"),
    "o2o_medium": (("mountain", "beach", "dirt", "jungle"), ("jungle", "dirt", "beach", "snow"), "desert"),
    "o2o_hard": (("jungle", "mountain", "snow", "desert"), ("mountain", "snow", "desert", "jungle"), "beach"),
    "m2m_hard": (("dirt", "jungle", "snow", "beach"), ("snow", "beach", "dirt", "jungle"), None),
    "m2m_easy": (("desert", "mountain", "dirt", "jungle"), ("dirt", "jungle", "mountain", "desert"), None),
    "m2m_medium": (("beach", "snow", "mountain", "desert"), ("desert", "mountain", "beach", "snow"), None),
}
CHALLENGES = ("o2o_easy", "o2o_medium", "o2o_hard", "m2m_easy", "m2m_medium", "m2m_hard")
DEFAULT_CHALLENGE = "m2m_hard"
PARTS = ("train", "test")
TOTAL = 3168  # build_combination's images per (breed, location) of a training set
SUFFIXES = (".png", ".jpg", ".jpeg")  # CustomImageFolder's, case as written
#: One entry of a part: (breeds, [(location, limit or None), ...]); the k-th location of a list
#: is read from dataset folder k for o2o, from folder 0 for m2m.
Entry = Tuple[Tuple[str, ...], List[Tuple[str, Optional[int]]]]


@dataclass
class SpawriousLayout(GroupLayout):
    """One part of one Spawrious challenge as a group `Layout` (variant `original`)."""

    kind = SPAWRIOUS
    challenge: str = DEFAULT_CHALLENGE
    part: str = "test"
    #: where the split named no challenge and the tree lacks the default's folders: which challenge
    #: was read instead and why ('' otherwise)
    fallback: str = ""

    def described(self) -> str:
        return f"Spawrious {self.challenge} ({self.part})"


def combinations(challenge: str) -> Dict[str, List[Entry]]:
    """`build_combination(challenge, ...)`: the training and test entries, in the source's order."""
    group, test, filler = COMBINATIONS[challenge]
    order = ("bulldog", "dachshund", "labrador", "corgi")
    if challenge.startswith("m2m"):
        pairs = ((0, 1), (1, 0), (2, 3), (3, 2))
        train = [((b,), [(group[i], TOTAL), (group[j], TOTAL)]) for b, (i, j) in zip(order, pairs)]
        tests = [((b,), [(test[i], None), (test[j], None)]) for b, (i, j) in zip(order, pairs)]
        return {"train": train, "test": tests}
    counts = (int(0.97 * TOTAL), int(0.87 * TOTAL))
    train = [((b,), [(group[i], counts[0]), (group[i], counts[1])]) for i, b in enumerate(order)]
    train.append((order, [(filler, TOTAL - counts[0]), (filler, TOTAL - counts[1])]))
    tests = [((b,), [(test[i], None), (test[i], None)]) for i, b in enumerate(order)]
    return {"train": train, "test": tests}


def find_spawrious(data) -> Optional[Path]:
    """The root holding `spawrious224/` when `data` is it or that folder itself (the source strips
    a trailing '/spawrious224/' too); None otherwise."""
    path = Path(data).expanduser()
    if (path / FOLDER).is_dir():
        return path
    if path.name == FOLDER and path.is_dir():
        return path.parent
    return None


def spawrious_layout(root: Path, split: Optional[str] = None,
                     variants: Optional[Sequence[str]] = None) -> SpawriousLayout:
    """The images of `split` (see the module docstring), each with its (breed, location) group."""
    only_original(root, variants, "Spawrious has its images")
    _check_folders(root / FOLDER)
    challenge, part = _split(root, split)
    fallback = ""
    if challenge != DEFAULT_CHALLENGE and (split or "test") in PARTS:
        missing = sorted(f for f in _folders(DEFAULT_CHALLENGE) if not (root / FOLDER / f).is_dir())
        fallback = (f"{root / FOLDER} lacks {DEFAULT_CHALLENGE}'s folder {missing[0]}, so Spawrious' {challenge} "
                    f"{part} set was read (--split <challenge>-{part} names another)")
    o2o = challenge.startswith("o2o")
    guard = RootGuard(root)
    items, groups = [], {}
    for breeds, locations in combinations(challenge)[part]:
        for k, (location, limit) in enumerate(locations):
            for breed in breeds:
                where = f"{k if o2o else 0}/{location}/{breed}"
                folder = root / FOLDER / where
                if not folder.is_dir():
                    raise DataError(f"{folder} is missing: Spawrious' {challenge} {part} set reads {location} "
                                    f"{breed}s from it (download the challenge's archive or the entire dataset)")
                names = [n for n in os.listdir(folder) if n.endswith(SUFFIXES)][:limit]
                for name in names:
                    image_id = f"{where}/{utf8_name(folder / name)}"
                    if image_id in groups:  # the source would feed it twice; no challenge does
                        raise DataError(f"{folder / name} is read twice by Spawrious' {challenge} {part} set")
                    items.append(Item(image_id=image_id, label=CLASSES.index(breed), path=guard.check(folder / name)))
                    groups[image_id] = f"{breed} on {location}"
    if not items:
        raise DataError(f"no images under {root / FOLDER} for Spawrious' {challenge} {part} set")
    return SpawriousLayout(root=root, split=f"{challenge}-{part}", classes=CLASSES, variants=("original",),
                           groups=groups, source=f"Spawrious {challenge}", challenge=challenge, part=part,
                           fallback=fallback, _items={"original": items})


def _split(root: Path, split: Optional[str]) -> Tuple[str, str]:
    """(challenge, part) of a split name; the default challenge where it names none."""
    split = split or "test"
    if split in PARTS:
        return _default_challenge(root), split
    challenge, _, part = split.rpartition("-") if split.rsplit("-", 1)[-1] in PARTS else (split, "", "test")
    if challenge not in CHALLENGES:
        raise DataError(f"{root} is Spawrious; its splits are <challenge>-<part> with a challenge of "
                        f"{', '.join(CHALLENGES)} and a part of train, test (e.g. o2o_easy-test), not {split!r}")
    return challenge, part


def _default_challenge(root: Path) -> str:
    """m2m_hard when the tree holds every folder it reads, else the first challenge it does."""
    for challenge in (DEFAULT_CHALLENGE, *CHALLENGES):
        if _holds(root, challenge):
            return challenge
    raise DataError(f"{root / FOLDER} holds the folders of no Spawrious challenge (m2m_hard reads "
                    f"{', '.join(sorted(_folders(DEFAULT_CHALLENGE))[:3])}, ...)")


def _folders(challenge: str) -> set:
    o2o = challenge.startswith("o2o")
    return {f"{k if o2o else 0}/{location}/{breed}" for entries in combinations(challenge).values()
            for breeds, locations in entries for k, (location, _) in enumerate(locations) for breed in breeds}


def _holds(root: Path, challenge: str) -> bool:
    return all((root / FOLDER / f).is_dir() for f in _folders(challenge))


def _check_folders(folder: Path) -> None:
    """Every location and breed folder of the dataset folders the challenges read (0, 1) is one of
    Spawrious' (hidden entries aside):
    a misspelt one would otherwise just be missing from the challenge that reads it."""
    for dataset in (folder / name for name in DATASET_FOLDERS[:2]):
        if not dataset.is_dir():
            continue
        for location in sorted(p for p in dataset.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if location.name not in LOCATIONS:
                raise DataError(f"{location}: {location.name!r} is not a Spawrious location ({', '.join(LOCATIONS)})")
            for breed in sorted(p for p in location.iterdir() if p.is_dir() and not p.name.startswith(".")):
                if breed.name not in CLASSES:
                    raise DataError(f"{breed}: {breed.name!r} is not a Spawrious breed ({', '.join(CLASSES)})")
