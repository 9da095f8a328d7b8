"""What the report shows of the renditions measure: both arms and the IN-R gap."""
from __future__ import annotations

from typing import Optional

from ..arms import gap_section
from ..registry import SectionContext, SectionSubject

NOTE = ("A 1000-class model on ImageNet-R's renditions against ImageNet's val photographs of the same classes "
        "(ImageNet-200), only those classes' logits competing (Whac-A-Mole's IN-R gap).")


def renditions_section(ctx: SectionContext, subject: SectionSubject) -> Optional[dict]:
    from . import MEASURE
    return gap_section(MEASURE, NOTE, ctx, subject)
