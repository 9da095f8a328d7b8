"""What the report shows of the texture measure: both arms and the SIN gap."""
from __future__ import annotations

from typing import Optional

from ..arms import gap_section
from ..registry import SectionContext, SectionSubject

NOTE = ("A 1000-class model on Stylized-ImageNet's val (each image's texture replaced by a painting's) against "
        "ImageNet's val, both by the argmax over the 1000 classes (Whac-A-Mole's SIN gap).")


def texture_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    return gap_section(MEASURE, NOTE, ctx, subject)
