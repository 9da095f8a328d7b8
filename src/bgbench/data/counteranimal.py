"""The CounterAnimal release (Wang et al., NeurIPS 2024, "A Sober Look at the Robustness of CLIPs to
Spurious Features"; counteranimal.github.io), read as it is laid out.

    LAION-final/<ImageNet index> <name>/common-<background>/<image>    the class on its common background
    LAION-final/<ImageNet index> <name>/counter-<background>/<image>   the class on its counter background
    LAION-final/imagenet_names.txt                                     '<index>\\t<names>' (prompts; not read)

Its authors publish no code that reads or scores it; the layout is the one the third-party loaders
that read it agree on (each takes `LAION-final/`, labels a class folder by the integer before its
first space, and reads its one `common-*` and one `counter-*` folder), and that a reproduction's
README draws (`10 salamander/common-grass`, `100 black swan/counter-grass`). The label is the
folder's ImageNet index and the classes are ImageNet's 1000, so a 1000-class model is scored on its
top-1 over all of them: the paper's "1 vs. 1000" setup.

Two variants, `common` and `counter`, each every class folder's images on that background. An
image's id is '<class folder>/<background folder>/<file name>', so the class is in the id
(the per-class gap reads it there). Images are fed through ImageNet's evaluation crop, Resize(256)
then CenterCrop(224). `data` is `LAION-final/` or a folder holding it (or `counteranimal/LAION-final`,
where one loader looks); the layout's root is that folder as named.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..class_maps import imagenet_wnids
from ..errors import DataError
from .imagenet_folders import EVAL_CROP
from .inside import RootGuard
from .layout import Item, utf8_name
from .maskless import ReleaseLayout, image_files
from .facts import COUNTERANIMAL as KIND

FOLDER = "LAION-final"
NAMES = "imagenet_names.txt"
#: The two groups, the variants, in the paper's order (common first: the gap is common − counter).
GROUPS = ("common", "counter")
CLASS_FOLDER = re.compile(r"^(\d+) (.+)$")


@dataclass
class CounterAnimalLayout(ReleaseLayout):
    """CounterAnimal as a `Layout`: variants `common` and `counter`, no masks, no split."""

    kind = KIND
    what = "CounterAnimal"


def find_counteranimal(data) -> Optional[Path]:
    """`data` when it is the `LAION-final/` folder or holds it (`final_folder`); None otherwise. The
    root stays the folder the user named, so a study's label for it names its runs."""
    path = Path(data).expanduser()
    return path if final_folder(path) is not None else None


def final_folder(path: Path) -> Optional[Path]:
    """The folder of class folders at or under `path`: one of '<index> <name>' class folders, one of
    which holds a `common-*` or `counter-*` folder."""
    return next((final for final in (path, path / FOLDER, path / "counteranimal" / FOLDER)
                 if final.is_dir() and not (final / "original").is_dir() and _holds_class_folder(final)), None)


def _holds_class_folder(root: Path) -> bool:
    """Cheap on a large flat folder (ImageNet's val): a name is matched before its entry is stat'ed."""
    groups = tuple(f"{g}-" for g in GROUPS)
    return any(CLASS_FOLDER.match(entry.name) and entry.is_dir() and
               any(p.name.startswith(groups) and p.is_dir() for p in entry.iterdir()) for entry in root.iterdir())


def counteranimal_layout(root: Path, variants: Optional[Sequence[str]] = None,
                         split: Optional[str] = None) -> CounterAnimalLayout:
    """Both groups of every class folder at `root` (or those named in `variants`), checked: each
    class folder is '<ImageNet index 0-999> <name>' with one `common-*` and one `counter-*` folder of
    images; each problem one line naming the path."""
    chosen = CounterAnimalLayout.chosen(root, GROUPS, variants, split)
    final = final_folder(root) or root
    guard = RootGuard(root)
    found: Dict[str, List[Item]] = {g: [] for g in chosen}
    for folder in sorted(p for p in final.iterdir() if p.is_dir() and not p.name.startswith(".")):
        label = _class_label(folder)
        for group in chosen:
            found[group] += _group_items(folder, group, label, guard)
    for group in chosen:
        if not found[group]:
            raise DataError(f"no images under {final}/<index> <name>/{group}-<background>/ (CounterAnimal's "
                            f"{group} group is empty)")
    return CounterAnimalLayout(root=root, split="", classes=imagenet_wnids(), variants=tuple(chosen), _items=found)


def _class_label(folder: Path) -> int:
    match = CLASS_FOLDER.match(utf8_name(folder))
    if match is None or int(match.group(1)) >= len(imagenet_wnids()):
        raise DataError(f"{folder}: CounterAnimal's class folders are '<ImageNet index 0-999> <name>' "
                        f"(such as '296 ice bear'); move this folder out")
    return int(match.group(1))


def _group_items(folder: Path, group: str, label: int, guard: RootGuard) -> List[Item]:
    """The images of a class folder's one `<group>-<background>` folder, in name order."""
    found = sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith(f"{group}-"))
    if len(found) != 1:
        what = "none" if not found else ", ".join(p.name for p in found)
        raise DataError(f"{folder}: CounterAnimal's class folders hold one {group}-<background> folder; "
                        f"this one holds {what}")
    return [Item(image_id=f"{folder.name}/{found[0].name}/{utf8_name(p)}", label=label, path=guard.check(p),
                 crop=EVAL_CROP)
            for p in image_files(found[0], "CounterAnimal's background folders hold only images; move this out")]
