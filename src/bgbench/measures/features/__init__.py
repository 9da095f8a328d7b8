"""Spurious features (RIVAL10 §5 after Salient ImageNet): each class's top penultimate features by
weight x mean activation, the share of their activation maps on the background, heatmap galleries."""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="spurious-feature discovery",
    name="features", kind="probe_features", needs=("model", "masks"), table="probe_features",
    help="spurious features: each class's top penultimate features (weight x mean activation) and the share of "
         "their activation maps on the background",
    description="spurious-feature discovery (RIVAL10 §5 after Salient ImageNet): each class's top penultimate "
                "features, the share of their activation maps on the background, and a heatmap gallery per class",
    config=f"{__name__}.probe:FeaturesConfig", compute=f"{__name__}.probe:probe_features",
    read=f"{__name__}.probe:features_summary",
    headlines=(Headline("features_bg_share", label="top features' map share on the background",
                        higher_is_better=False, short="features on bg"),),
    pictures="galleries",
    pictures_help="folder for the heatmap PNGs (default: a new probe_features_<time>/ beside the results store)",
    sections=(SectionSpec("features", "Spurious features (RIVAL10 §5, Salient ImageNet's ranking)",
                          f"{__name__}.section:features_section"),),
), package=__name__)
