"""Attribute ablation (RIVAL10's attr_importance): the object, the background and each attribute
replaced by gray; the drop in accuracy and in true-class probability, per region and class."""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="attribute ablation",
    name="ablate", kind="probe_ablate", needs=("model", "masks"), table="probe_ablate",
    help="gray out the object, the background and each attribute: accuracy and true-class probability drops, "
         "per region and class",
    description="the object, the background and each attribute replaced by gray (RIVAL10); the drop in accuracy "
                "and in true-class probability, per region and per class",
    config=f"{__name__}.probe:AblateConfig", compute=f"{__name__}.probe:probe_ablate",
    read=f"{__name__}.probe:ablation_summary", data_help="original/ and fg_mask/ (and attr_mask/ for attributes)",
    headlines=(Headline("ablation_acc_drop", "bg", label="accuracy drop with the background grayed", short="bg gray drop",
                        higher_is_better=False, percent=True),
               Headline("ablation_acc_drop", "fg", label="accuracy drop with the object grayed", percent=True,
                        short="object gray drop")),
    sections=(SectionSpec("ablation", "Attribute ablation (RIVAL10)", f"{__name__}.section:ablation_heatmap",
                          scope="page"),),
), package=__name__)
