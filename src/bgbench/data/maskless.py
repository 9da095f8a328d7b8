"""Layouts without foreground or attribute masks, read by the readers of released benchmarks
(`data.imagenet_d`, `data.imagenet_e`, `data.counteranimal`, Salient and Spurious ImageNet) and
of images alone (group files, ImageNet's own folders): the IN-9 `Layout` with its masks refused
in one line."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar, List

from ..errors import DataError
from .layout import Item, Layout


@dataclass
class MasklessLayout(Layout):
    """A layout with no foreground masks and no attribute masks (ImageNet-D, and `ImagesOnlyLayout`).
    `what` names the dataset in its errors; `mask_hint` says where masks come from, if anywhere."""

    what: ClassVar[str] = "this dataset"
    mask_hint: ClassVar[str] = ""

    def described(self) -> str:
        return self.what

    @property
    def has_masks(self) -> bool:
        return False

    @property
    def attribute_source(self):
        return None

    def foregrounds(self):
        raise DataError(f"{self.root} is {self.described()}, without foreground masks{self.mask_hint}")


@dataclass
class ReleaseLayout(MasklessLayout):
    """A benchmark read as released, with no masks and no split (ImageNet-D, the ImageNet-E release,
    CounterAnimal): a variant per folder it holds, named in its errors as `variants_are` says, and a
    fingerprint of every image read under its kind."""

    variants_are: ClassVar[str] = "its variants are"

    def items(self, variant: str) -> List[Item]:
        if variant not in self._items:
            raise DataError(f"{self.root} is {self.what}; {self.variants_are} {', '.join(self.variants)}, "
                            f"not {variant!r}")
        return self._items[variant]

    def fingerprint(self) -> str:
        """Variant, id, label and size of every image read."""
        if self._fingerprint is None:
            h = hashlib.sha256(self.kind.encode())
            for variant in self.variants:
                for it in self._items[variant]:
                    h.update(f"{variant}/{it.image_id}:{it.label}:{it.path.stat().st_size}".encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint


@dataclass
class ImagesOnlyLayout(MasklessLayout):
    """A layout of images alone: one variant (`original`), no masks (a group dataset, ImageNet's own
    folders)."""

    def items(self, variant: str) -> List[Item]:
        if variant != "original":
            raise DataError(f"variant {variant!r} not found under {self.root}: {self.described()} has its images "
                            f"only (variant original)")
        return self._items["original"]
