"""Feature attribution (RIVAL10 §6): per attribute, the penultimate-layer features whose activation
maps best overlap its mask (IoU at 0.5 of the map's maximum), per class and over all classes."""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="feature attribution",
    name="attribution", kind="probe_attribution", needs=("model", "attributes"), table="probe_attribution",
    help="per attribute, the features whose maps best overlap its mask (IoU at 0.5 of the map's max), per class "
         "and over all classes",
    description="per attribute, the penultimate-layer features whose activation maps best overlap its mask "
                "(RIVAL10's feature attribution)",
    config=f"{__name__}.probe:AttributionConfig", compute=f"{__name__}.probe:probe_attribution",
    read=f"{__name__}.probe:attribution_summary", data_help="original/, fg_mask/ and attr_mask/",
    headlines=(Headline("attribution_iou", label="mean over attributes of the best feature's IoU",
                        short="attribution IoU"),),
    sections=(SectionSpec("attribution", "Feature attribution (RIVAL10 §6)",
                          f"{__name__}.section:attribution_section"),),
), package=__name__)
