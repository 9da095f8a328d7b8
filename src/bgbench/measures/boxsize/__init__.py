"""Accuracy by the foreground box's share of the image (paper Fig. 14), from a stored eval run."""
from ..registry import Measure, SectionSpec, register_measure


class BoxSize(Measure):
    name = "boxsize"
    position = 40
    source = ("Xiao et al., Fig. 14: accuracy in quantile bins of the foreground box's share of the "
              "image")
    checked_against = ("tests/measures/test_boxsize.py (quantile bins by hand; boxes recovered from "
                       "ONLY-BG-B against the true ones)")
    title = "accuracy by box size"
    needs = ("eval run", "boxes")
    help = "accuracy per variant in quantile bins of box size (paper Fig. 14)"
    sections = (SectionSpec("boxsize", "Accuracy by box size (paper Fig. 14)", f"{__name__}.section:boxsize_section"),)

    def of_run(self, store, run_id: int, variants=("only_bg_t",), bins: int = 5, data=None, mapping=None):
        """A stored eval run's accuracy per variant in quantile bins of box size; the boxes come
        from `data` (default: the dataset the run evaluated)."""
        from .summary import box_size_curve
        return box_size_curve(store, run_id, variants=variants, bins=bins, data=data, mapping=mapping)

    def of_table(self, table, variants=("only_bg_t",), bins: int = 5, data=None):
        from .summary import box_size_of
        return box_size_of(table, variants=variants, bins=bins, data=data)


MEASURE = register_measure(BoxSize)
