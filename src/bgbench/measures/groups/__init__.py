"""Worst-group accuracy: accuracy per group, its worst group and the mean over groups, from a stored
eval run: a group is (object class, background class) of a mixed variant, from the dataset's
manifest, or a group dataset's own (Waterbirds, groups.csv, Spawrious' (breed, location))."""
from ..analysis import AnalysisMeasure
from ..common.groups import MIN_IMAGES
from ..registry import SectionSpec, register_measure
from .config import GroupsConfig


class Groups(AnalysisMeasure):
    name = "groups"
    position = 70
    report_only = True  # a study shows it from its eval runs
    source = ("worst-group accuracy of the spurious-correlation literature (Sagawa et al., 2020: "
              "Waterbirds), groups being (object class, background class); on Spawrious (aengusl/spawrious), "
              "the (class_label, location_label) of `spawrious/torch.py`'s images, whose own code reports "
              "only the mean test accuracy")
    checked_against = ("tests/measures/test_groups.py (a table worked by hand; stored groups "
                       "against the manifest and predictions read with the csv module) and "
                       "tests/test_benchmarks.py (Spawrious' groups against its `SpawriousBenchmark` data lists, written out in the test)")
    title = "worst-group accuracy"
    config = GroupsConfig
    help = ("accuracy per (class, background class) group of MIXED-RAND (or a group dataset's groups), the worst "
            "group and the mean over groups")
    sections = (SectionSpec("groups", "Worst-group accuracy", f"{__name__}.section:groups_section", after="leakage"),)

    def of_run(self, store, run_id: int, variant=None, data=None, mapping=None, min_images: int = MIN_IMAGES):
        """A stored eval run's accuracy per group, its worst group and the mean over groups: the groups
        are the mixed variant's (class, background class), from the manifest of `data` (default: the
        run's own dataset), or a group dataset's own."""
        from .stored import worst_group
        return worst_group(store, run_id, variant=variant, data=data, mapping=mapping, min_images=min_images)


MEASURE = register_measure(Groups)
