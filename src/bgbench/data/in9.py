"""Reading an IN-9 root (`discover`): the release's layout, validated before any work, into
`data.layout`'s `Layout`.

    ROOT/<variant>/<split>/<class folder>/<stem>.<ext>

Every variant must hold the same class folders (and so must fg_mask/ and attr_mask/, where
present), and no variant may be empty; each refusal is one line naming the folder.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Tuple

from ..errors import DataError
from .attributes import ATTR_DIR
from .layout import IN9_VARIANTS, MASK_DIR, Layout, utf8_name

#: Variants bgbench adds beside the release's (paper Fig. 15).
EXTRA_VARIANTS = ("bg_blurred",)


def class_dirs(split_dir: Path) -> Tuple[str, ...]:
    """The class folders of a split, in sorted order: a class's label is its position here."""
    return tuple(sorted(utf8_name(p) for p in split_dir.iterdir() if p.is_dir()))


def discover(root: str | Path, split: str = "val", variants: Optional[Sequence[str]] = None) -> Layout:
    """Validate `root` and return its `Layout`.

    Args:
        root: dataset root holding one folder per variant.
        split: the split folder inside each variant ('val' for the IN-9 release).
        variants: variants that must be present; default: every variant folder found.

    Raises:
        DataError: a missing root/variant/split folder, class folders that differ between
            variants (or from fg_mask), or a variant with no images.
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DataError(f"dataset root {root} does not exist or is not a folder")
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in (MASK_DIR, ATTR_DIR))
    if variants is None:  # a known variant folder without the split is a broken layout (refused below), not noise
        variants = [v for v in found if (root / v / split).is_dir() or v in IN9_VARIANTS + EXTRA_VARIANTS]
        if not variants:
            raise DataError(f"no <variant>/{split}/ folders under {root}; expected the IN-9 layout "
                            f"ROOT/original/{split}/<class>/<image>")
    for v in variants:
        if not (root / v).is_dir():
            raise DataError(f"variant folder {root / v} is missing (present: {', '.join(found) or 'none'})")
        if not (root / v / split).is_dir():
            raise DataError(f"{root / v} has no {split}/ folder (expected {root / v / split}/<class>/<image>)")
    reference = variants[0]
    classes = class_dirs(root / reference / split)
    if not classes:
        raise DataError(f"{root / reference / split} has no class folders")
    for v in [*variants[1:], *(d for d in (MASK_DIR, ATTR_DIR) if (root / d / split).is_dir())]:
        mine = class_dirs(root / v / split)
        if mine != classes:
            extra = sorted(set(mine) - set(classes))
            lacking = sorted(set(classes) - set(mine))
            detail = "; ".join(filter(None, [f"extra {extra}" if extra else "",
                                             f"missing {lacking}" if lacking else ""])) or "different order"
            raise DataError(f"class folders of {root / v / split} differ from {root / reference / split}: {detail}")
    layout = Layout(root=root, split=split, classes=classes, variants=tuple(variants))
    for v in variants:
        if not layout.items(v):
            raise DataError(f"no images under {root / v / split} (empty dataset)")
    return layout

