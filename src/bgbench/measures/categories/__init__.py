"""The paper's prediction categories (Table 3): BG Irrelevant (the object alone is judged as the
full image is, right on both or wrong on both), BG Required, BG+FG Required, BG Fools and Other,
per class, from a stored eval run's ORIGINAL, MIXED-RAND and ONLY-BG-T predictions."""
from ..analysis import AnalysisMeasure
from ..registry import SectionSpec, register_measure


class Categories(AnalysisMeasure):
    name = "categories"
    position = 30
    report_only = True  # a study shows it from its eval runs
    source = ("Xiao et al., Table 3: BG Irrelevant, BG Required, BG+FG Required, BG Fools and "
              "Other, from the ORIGINAL, MIXED-RAND and ONLY-BG-T predictions")
    checked_against = ("tests/measures/test_categories.py (cases worked out by hand, from stored "
                       "runs of 9-class and 1000-class models)")
    title = "prediction categories"
    help = "BG Irrelevant / Required / Fools ... per class (paper Table 3)"
    sections = (SectionSpec("categories", "Prediction categories (paper Table 3)",
                            f"{__name__}.section:categories_section"),
                SectionSpec("categories_gallery", "Images behind the prediction categories",
                            f"{__name__}.section:categories_gallery", after="categories"))

    def of_run(self, store, run_id: int, mapping=None):
        """Table 3 of a stored eval run (its decisions re-made under `mapping` where given)."""
        from .summary import prediction_categories
        return prediction_categories(store, run_id, mapping=mapping)

    def of_table(self, table):
        from .summary import categories_of
        return categories_of(table)


MEASURE = register_measure(Categories)
