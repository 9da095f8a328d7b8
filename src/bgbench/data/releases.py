"""Which of the releases read with ImageNet's 1000 classes a `--data` path is: the ImageNet-E
release (`data.imagenet_e`) or CounterAnimal's (`data.counteranimal`), each found by its own marks.
One hook for both keeps `data.resolve` to one line per family of layouts."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from .counteranimal import counteranimal_layout, find_counteranimal
from .imagenet_e import find_imagenet_e, imagenet_e_layout


@dataclass(frozen=True)
class Release:
    """A release found at `root`, and its reader."""

    root: Path
    reader: Callable

    def read(self, variants: Optional[Sequence[str]] = None, split: Optional[str] = None):
        return self.reader(self.root, variants, split)


def find_release(data) -> Optional[Release]:
    """The release `data` is, or None."""
    root = Path(data).expanduser()
    if not root.is_dir():
        return None
    found = find_imagenet_e(root)
    if found is not None:
        return Release(found, imagenet_e_layout)
    found = find_counteranimal(root)
    return None if found is None else Release(found, counteranimal_layout)
