"""ImageNet-E's measure: the accuracy drop from ORIGINAL per attribute level of an edited dataset,
with paired intervals, from stored eval runs of a `bgbench edit` folder."""
from ..registry import Measure, SectionSpec, register_measure


class Edits(Measure):
    name = "edits"
    title = "edit drops"
    needs = ("eval run",)
    help = ("accuracy drop from original per edit level, with paired 95% intervals (eval runs of a `bgbench edit` "
            "folder)")
    sections = (SectionSpec("edits", "Attribute edits (ImageNet-E)", f"{__name__}.section:edits_section"),
                SectionSpec("edits_gallery", "Edits that flip the prediction", f"{__name__}.section:edits_gallery",
                            after="edits"))


MEASURE = register_measure(Edits)
