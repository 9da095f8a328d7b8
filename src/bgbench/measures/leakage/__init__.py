"""Box leakage (paper §5): ONLY-BG-B / ONLY-BG-T accuracy above chance for models trained on
MIXED-RAND or ONLY-FG; NO-FG apart, as silhouette signal."""
from ..analysis import AnalysisMeasure
from ..registry import SectionSpec, register_measure


class Leakage(AnalysisMeasure):
    name = "leakage"
    position = 50
    report_only = True  # a study shows it from its eval runs
    source = ("Xiao et al., §5: accuracy on ONLY-BG-B and ONLY-BG-T above chance, for models "
              "trained on MIXED-RAND or ONLY-FG")
    checked_against = "tests/measures/test_leakage.py (tables worked out by hand)"
    title = "box leakage"
    help = ("only_bg_b/only_bg_t accuracy above chance (box leakage), for models trained on MIXED-RAND or ONLY-FG; "
            "no_fg apart, as silhouette signal")
    sections = (SectionSpec("leakage", "Box leakage and silhouette signal (paper §5)",
                            f"{__name__}.section:leakage_section"),)

    def of_run(self, store, run_id: int, mapping=None):
        """A stored eval run's background-only accuracy above chance (and what its model trained on)."""
        from .summary import leakage
        return leakage(store, run_id, mapping=mapping)

    def of_table(self, table):
        from .summary import leakage_of
        return leakage_of(table)

    def notes(self, result, run):
        """Leakage is meant for models trained where backgrounds carry no class: say so for others."""
        if result.trained_on in (None, "mixed_rand", "only_fg"):
            return []
        return [f"note: run {run}'s model was trained on {result.trained_on}; leakage is meant for models "
                f"trained on mixed_rand or only_fg, where background-only accuracy should be at chance"]


MEASURE = register_measure(Leakage)
