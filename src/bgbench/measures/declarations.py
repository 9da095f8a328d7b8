"""What a measure declares of its part in the package's shared tables, beside its own run: its arms
as a gap, its columns of the shortcut table, its headlines on a benchmark's own data, its place in
`bgbench profile`'s battery. Each reader (the shortcut table and its changes, the scorecard,
studies, the manual) collects these from the registry, so a measure added to its folder shows up
in every one of them without a line anywhere else.

A `place` orders one kind of declaration across the measures (lower first): a table's columns
interleave the measures (the shortcut table reads eval's IN-1k accuracy first and its BG-Gap after
the gaps), so each declaration says where it goes instead of following the measures' `position`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

#: How a shortcut column's images reached the model (before its own normalization and resize policy).
CROP = "Resize(256), CenterCrop(224)"
AS_HELD = "as the dataset holds them"


@dataclass(frozen=True)
class GapArms:
    """A two-arm measure's gap, as the shortcut table's paired changes read its stored rows: the
    reference arm, the shifted arm, and what pairs an image across them ('id': the image id; 'stem':
    the file name without its extension, a stylized copy's)."""

    reference: str
    shifted: str
    key: str = "id"


@dataclass(frozen=True)
class ShortcutColumn:
    """One column of the shortcut table (`measures/shortcuts/table.py`) that a measure's runs fill:
    its key and title, the metric (variant) it reads, whether it is a share (a percentage), its
    direction, the data it is read on ('imagenet': ImageNet's own images only; 'other': every other
    dataset; 'any'), and its preprocessing where it is its own whatever the data (None: the
    dataset's).

    `other_title`: its title on a dataset other than ImageNet's val, where the number is not the
    benchmark's (the watermark gap off ImageNet-W). `shortcut`: False for a number shown beside the
    shortcuts (an accuracy, BG-Gap), which alone makes no block of the table. `class_of`: a key of
    the run's config naming the one class (its 'label') whose images the gap is read on (the Carton
    gap), else every image."""

    place: int
    key: str
    title: str
    metric: str
    variant: str = ""
    percent: bool = True
    higher_is_better: bool = True
    data: str = "any"
    preprocessing: Optional[str] = None
    other_title: Optional[str] = None
    shortcut: bool = True
    class_of: Optional[str] = None
    #: The paired change of this column from a base model's run to a derived model's, as
    #: 'module:function' called with (store, column, base_run, derived_run, seed); None: the gap of
    #: the measure's `gap_arms`, paired over images.
    change: Optional[str] = None


@dataclass(frozen=True)
class BenchmarkHeadlines:
    """A measure's headlines on one benchmark's own data (the runs on it record its `data_kind`,
    `data.hardimagenet.KIND`), which the scorecard shows there, in `place` order among every
    measure's on that data.
    `replaces`: in place of the measure's own headlines on that data (Hard ImageNet's figures are
    not RIVAL10's); else beside them. A measure whose headlines there follow from its run (noise's
    RFS per level of its grid) returns them from `Measure.headlines_on`."""

    data_kind: str
    place: int
    headlines: Tuple[Any, ...] = ()  # registry.Headline
    replaces: bool = False


@dataclass(frozen=True)
class InProfile:
    """A measure's part in `bgbench profile`'s standard battery: its place among the battery's
    measures, and the options it runs with there (its defaults for any other)."""

    place: int
    options: Dict[str, Any] = field(default_factory=dict)
