"""Accuracy by the foreground box's share of the image (paper Fig. 14), from a stored eval run."""
from ..registry import Measure, SectionSpec, register_measure


class BoxSize(Measure):
    name = "boxsize"
    title = "accuracy by box size"
    needs = ("eval run", "boxes")
    help = "accuracy per variant in quantile bins of box size (paper Fig. 14)"
    sections = (SectionSpec("boxsize", "Accuracy by box size (paper Fig. 14)", f"{__name__}.section:boxsize_section"),)


MEASURE = register_measure(BoxSize)
