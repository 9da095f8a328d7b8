"""Box leakage (paper §5): ONLY-BG-B / ONLY-BG-T accuracy above chance for models trained on
MIXED-RAND or ONLY-FG; NO-FG apart, as silhouette signal."""
from ..registry import Measure, SectionSpec, register_measure


class Leakage(Measure):
    name = "leakage"
    position = 50
    source = ("Xiao et al., §5: accuracy on ONLY-BG-B and ONLY-BG-T above chance, for models "
              "trained on MIXED-RAND or ONLY-FG")
    checked_against = "tests/measures/test_leakage.py (tables worked out by hand)"
    title = "box leakage"
    needs = ("eval run",)
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


MEASURE = register_measure(Leakage)
