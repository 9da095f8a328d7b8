"""Whose code defines the RIVAL10 probes (noise, saliency, ablate) on a dataset: Hard ImageNet's own
code (`rfs.py`, `saliency_analysis.py`, `ablations.py`) on Hard ImageNet's data, RIVAL10's on every
other. Each probe records the name in its run, and reads it back from there."""
from __future__ import annotations

RIVAL10, HARDIMAGENET = "rival10", "hardimagenet"


def probe_protocol(layout) -> str:
    """HARDIMAGENET on Hard ImageNet's data (`data.hardimagenet`), else RIVAL10."""
    return protocol_of_kind(getattr(layout, "kind", None))


def protocol_of_kind(kind) -> str:
    """HARDIMAGENET on data of Hard ImageNet's layout kind, else RIVAL10."""
    from ...data.facts import HARD_IMAGENET as KIND
    return HARDIMAGENET if kind == KIND else RIVAL10
