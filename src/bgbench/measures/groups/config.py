"""The groups analysis's options (torch-free, read when the registry is): the variant whose images
are grouped, the images a group needs to be named the worst, and whose manifest gives the groups."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ... import checks
from ...options import flag
from ..common.groups import MIN_IMAGES

#: The mixed variants whose images record a background class.
MIXED = ("mixed_rand", "mixed_next", "mixed_same")


@dataclass(frozen=True)
class GroupsConfig:
    """Which variant's images are grouped, how many images a group needs to be named the worst, and
    whose manifest says each image's group."""

    variant: Optional[str] = field(default=None, metadata=flag(
        "--variant", "the mixed variant whose images are grouped by their background's class (default mixed_rand; "
        "a group dataset's run: original, its groups)", choices=(*MIXED, "original")))
    min_images: int = field(default=MIN_IMAGES, metadata=flag(
        "--min-images", "images a group needs to be named the worst (default %(default)s)"))
    data: Optional[str] = field(default=None, metadata=flag(
        "--data", "dataset root with the manifest (default: the run's own)"))

    def __post_init__(self):
        checks.at_least("--min-images", self.min_images, 1)
