"""Layouts without foreground or attribute masks, read by the readers of released benchmarks
(`data.imagenet_d`, `data.imagenet_e`, `data.counteranimal`, Salient and Spurious ImageNet) and
of images alone (group files, ImageNet's own folders): the IN-9 `Layout` with its masks refused
in one line; and what those readers share: the refusal of a variant or a split they lack, and a
fingerprint of the files they read."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterator, List, Optional, Sequence

from ..errors import DataError
from .images import IMAGE_SUFFIXES
from .layout import Item, Layout


def only_original(root, variants: Optional[Sequence[str]], what: str) -> None:
    """One line for any of `variants` but `original`, in a dataset whose one variant is its images
    (`what`: 'RIVAL10 has its images')."""
    for v in variants or ():
        if v != "original":
            raise DataError(f"variant {v!r} not found under {root}: {what} only (variant original)")


def refuse_split(root, split: Optional[str], what: str) -> None:
    """One line for a split asked of `what`, a dataset that has none."""
    if split:
        raise DataError(f"{root} is {what}, which has no splits; drop --split {split}")


def image_files(folder: Path, refusal: str) -> Iterator[Path]:
    """The entries of a release's `folder` in name order, hidden ones aside, each an image file; the
    first that is not is one line, its path then `refusal`. Yielded one at a time, so a caller's
    checks of an image (its name, its place) run before the next entry is looked at."""
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if not p.is_file() or p.suffix.lower() not in IMAGE_SUFFIXES:
            raise DataError(f"{p}: {refusal}")
        yield p


def hashed(layout: Layout, head: str, lines) -> str:
    """The fingerprint of a reader that knows its files, cached on `layout`: 16 hex digits of the
    sha256 of `head` and `lines` (read once: a generator, so a cached fingerprint stats no file)."""
    if layout._fingerprint is None:
        h = hashlib.sha256(head.encode())
        for line in lines:
            h.update(line.encode())
        layout._fingerprint = h.hexdigest()[:16]
    return layout._fingerprint


@dataclass
class MasklessLayout(Layout):
    """A layout with no foreground masks and no attribute masks (ImageNet-D, and `ImagesOnlyLayout`).
    `what` names the dataset in its errors; `mask_hint` says where masks come from, if anywhere."""

    what: ClassVar[str] = "this dataset"
    mask_hint: ClassVar[str] = ""

    def described(self) -> str:
        return self.what

    has_masks, attribute_source = False, None  # the properties of `Layout`, fixed

    def foregrounds(self):
        raise DataError(f"{self.root} is {self.described()}, without foreground masks{self.mask_hint}")


@dataclass
class ReleaseLayout(MasklessLayout):
    """A benchmark read as released, with no masks and no split (ImageNet-D, the ImageNet-E release,
    CounterAnimal): a variant per folder it holds, named in its errors as `variants_are` says, and a
    fingerprint of every image read under its kind."""

    variants_are: ClassVar[str] = "its variants are"

    @classmethod
    def chosen(cls, root, present: Sequence[str], variants: Optional[Sequence[str]], split: Optional[str]) -> List[str]:
        """The variants of `present` that `variants` names (default every one), in `present`'s order;
        one line for a split (a release has none) or a variant not present."""
        refuse_split(root, split, cls.what)
        for v in variants or ():
            if v not in present:
                raise DataError(f"{root} is {cls.what}; {cls.variants_are} {', '.join(present)}, not {v!r}")
        return [v for v in present if variants is None or v in variants]

    def items(self, variant: str) -> List[Item]:
        if variant not in self._items:
            raise DataError(f"{self.root} is {self.what}; {self.variants_are} {', '.join(self.variants)}, "
                            f"not {variant!r}")
        return self._items[variant]

    def fingerprint(self) -> str:
        """Variant, id, label and size of every image read."""
        return hashed(self, self.kind, (f"{variant}/{it.image_id}:{it.label}:{it.path.stat().st_size}"
                                        for variant in self.variants for it in self._items[variant]))


@dataclass
class ImagesOnlyLayout(MasklessLayout):
    """A layout of images alone: one variant (`original`), no masks (a group dataset, ImageNet's own
    folders)."""

    holds: ClassVar[str] = "its images"  # what its one variant is

    def items(self, variant: str) -> List[Item]:
        only_original(self.root, [variant], f"{self.described()} has {self.holds}")
        return self._items["original"]
