"""ImageNet-E's measure: the accuracy drop from ORIGINAL per attribute level of an edited dataset,
with paired intervals, from stored eval runs of a `bgbench edit` folder or of the ImageNet-E release
(its Table 1), the two beside each other in one table when a model's runs read both."""
from dataclasses import dataclass, field

from ... import checks
from ...evaluation.metrics import REPLICATES
from ...options import flag
from ..analysis import AnalysisMeasure, Reads
from ..registry import SectionSpec, register_measure
from .beside import edits_of_runs
from .summary import edit_drops_of, runs_by_model


@dataclass(frozen=True)
class EditsConfig:
    """The paired bootstrap of each level's drop: its seed and its resamples."""

    seed: int = field(default=0, metadata=flag("--seed", "seed of the paired bootstrap (default %(default)s)"))
    n_boot: int = field(default=REPLICATES, metadata=flag("--bootstrap", "bootstrap resamples (default %(default)s)",
                                                           metavar="BOOTSTRAP"))

    def __post_init__(self):
        checks.at_least("--bootstrap", self.n_boot, 100)


class Edits(AnalysisMeasure):
    name = "edits"
    position = 60
    source = ("ImageNet-E (Li et al., CVPR 2023): the accuracy drop from the original images at "
              "each attribute-edit level (Table 1; its dropped accuracy, Eq. 8: DA = acc_original − acc), "
              "on bgbench's own edits and on the released ImageNet-E")
    checked_against = ("tests/measures/test_edits.py (drops and paired intervals by hand, end to "
                       "end through edit, eval and analyze) and tests/test_releases.py (Table 1 and Eq. 8 on a "
                       "generated release, written out in the test; the release beside a `bgbench edit` folder)")
    title = "edit drops"
    reads = Reads.RUNS
    config = EditsConfig
    help = ("accuracy drop from original per edit level, with paired 95% intervals (eval runs of a `bgbench edit` "
            "folder)")
    sections = (SectionSpec("edits", "Attribute edits (ImageNet-E)", f"{__name__}.section:edits_section"),
                SectionSpec("edits_gallery", "Edits that flip the prediction", f"{__name__}.section:edits_gallery",
                            after="edits"))

    def of_run(self, store, run_ids, n_boot: int = REPLICATES, seed: int = 0):
        """Each level's drop from ORIGINAL, paired over images, from the eval runs `run_ids` of one
        model (`summary.runs_by_model` splits runs of several); runs on several datasets (the
        ImageNet-E release and a `bgbench edit` folder) give one table, a column group per dataset
        (`beside`)."""
        return edits_of_runs(store, list(run_ids), n_boot=n_boot, seed=seed)

    def of_table(self, table, n_boot: int = REPLICATES, seed: int = 0):
        return edit_drops_of(table, n_boot=n_boot, seed=seed)

    def per_model(self, store, run_ids):
        """The runs grouped by model and weights: each model's edits are compared apart."""
        return runs_by_model(store, run_ids)


MEASURE = register_measure(Edits)
