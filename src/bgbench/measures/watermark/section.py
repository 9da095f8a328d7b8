"""What the report shows of the watermark measure: both arms, the IN-W gap and the Carton gap."""
from __future__ import annotations

from typing import Optional

from ..arms import gap_section
from ..registry import SectionContext, SectionSubject

NOTE = ("Each image against a copy with ImageNet-W's watermark (the imagenet-w package's transform and font, drawn "
        "after the resize and crop as Whac-A-Mole does); the Carton gap is the same on the images of the class the "
        "mark is a shortcut to.")


def watermark_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    return gap_section(MEASURE, NOTE, ctx, subject)
