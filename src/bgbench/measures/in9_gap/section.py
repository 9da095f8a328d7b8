"""What the report shows of the in9_gap measure: both arms and Whac-A-Mole's IN-9 gap."""
from __future__ import annotations

from typing import Optional

from ..arms import gap_section
from ..registry import SectionContext, SectionSubject

NOTE = ("IN-9's MIXED-SAME and MIXED-RAND read as Whac-A-Mole reads them: each image through torchvision's "
        "Resize(256) then CenterCrop(224), a 1000-class model's argmax mapped to IN-9's classes; the gap is "
        "MIXED-RAND minus MIXED-SAME. The accuracy section's BG-Gap feeds the images as they are (the Backgrounds "
        "Challenge's protocol), so it is not this gap's negative.")


def in9_gap_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    return gap_section(MEASURE, NOTE, ctx, subject)
