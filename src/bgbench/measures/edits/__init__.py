"""ImageNet-E's measure: the accuracy drop from ORIGINAL per attribute level of an edited dataset,
with paired intervals, from stored eval runs of a `bgbench edit` folder."""
from ...intervals import REPLICATES
from ..registry import Measure, SectionSpec, register_measure


class Edits(Measure):
    name = "edits"
    position = 60
    source = ("ImageNet-E (Li et al., CVPR 2023): the accuracy drop from the original images at "
              "each attribute-edit level")
    checked_against = ("tests/measures/test_edits.py (drops and paired intervals by hand, end to "
                       "end through edit, eval and analyze)")
    title = "edit drops"
    needs = ("eval run",)
    help = ("accuracy drop from original per edit level, with paired 95% intervals (eval runs of a `bgbench edit` "
            "folder)")
    sections = (SectionSpec("edits", "Attribute edits (ImageNet-E)", f"{__name__}.section:edits_section"),
                SectionSpec("edits_gallery", "Edits that flip the prediction", f"{__name__}.section:edits_gallery",
                            after="edits"))

    def of_run(self, store, run_ids, n_boot: int = REPLICATES, seed: int = 0):
        """Each level's drop from ORIGINAL, paired over images, from the eval runs `run_ids` of one
        model (`summary.runs_by_model` splits runs of several)."""
        from .summary import edit_drops
        return edit_drops(store, list(run_ids), n_boot=n_boot, seed=seed)

    def of_table(self, table, n_boot: int = REPLICATES, seed: int = 0):
        from .summary import edit_drops_of
        return edit_drops_of(table, n_boot=n_boot, seed=seed)


MEASURE = register_measure(Edits)
