"""Accuracy by the foreground box's share of the image (paper Fig. 14), from a stored eval run."""
from dataclasses import dataclass, field
from typing import Optional, Tuple

from ...options import flag
from ...variants.registry import list_variants
from ..analysis import AnalysisMeasure
from ..registry import SectionSpec, register_measure


@dataclass(frozen=True)
class BoxSizeConfig:
    """Which variants are binned, in how many quantile bins, and whose boxes."""

    variants: Tuple[str, ...] = field(default=("only_bg_t",), metadata=flag(
        "--variants", "variants to bin (default: %(default)s)", nargs="+", choices=list_variants(),
        metavar="VARIANT", type=str))
    bins: int = field(default=5, metadata=flag("--bins", "number of quantile bins (default %(default)s)"))
    data: Optional[str] = field(default=None, metadata=flag(
        "--data", "dataset root for the boxes (default: the run's own)"))


class BoxSize(AnalysisMeasure):
    name = "boxsize"
    position = 40
    report_only = True  # a study shows it from its eval runs
    source = ("Xiao et al., Fig. 14: accuracy in quantile bins of the foreground box's share of the "
              "image")
    checked_against = ("tests/measures/test_boxsize.py (quantile bins by hand; boxes recovered from "
                       "ONLY-BG-B against the true ones)")
    title = "accuracy by box size"
    needs = ("eval run", "boxes")
    config = BoxSizeConfig
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

    def document(self, result):
        """The curves beside the run and where its boxes came from."""
        return {"run_id": result.run_id, "box_source": result.box_source, "curves": result.to_dict()}


MEASURE = register_measure(BoxSize)
