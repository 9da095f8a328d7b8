"""Worst-group accuracy: accuracy per (object class, background class) group of a mixed variant,
its worst group and the mean over groups, from a stored eval run and its dataset's manifest."""
from ..registry import Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="worst-group accuracy",
    name="groups", kind=None, command="analyze", needs=("eval run",),
    help="accuracy per (class, background class) group of MIXED-RAND, the worst group and the mean over groups",
    sections=(SectionSpec("groups", "Worst-group accuracy (MIXED-RAND: class x background class)",
                          f"{__name__}.section:groups_section", after="leakage"),),
), package=__name__)
