"""Saliency alignment (RIVAL10): Grad-CAM on the predicted class against the object mask
(precision, IoU, Dice, Δdensity, coverage, AP), by predicted class, with example overlays."""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="saliency alignment",
    name="saliency", kind="probe_saliency", needs=("model", "masks"), table="probe_saliency",
    help="Grad-CAM on the predicted class: RIVAL10's alignment with the mask (precision, IoU, Dice, Δdensity, "
         "coverage, AP)",
    description="Grad-CAM alignment with the object mask (RIVAL10's measures), by predicted class, with an overlay "
                "PNG of the most and least aligned images",
    config=f"{__name__}.probe:SaliencyConfig", compute=f"{__name__}.probe:probe_saliency",
    read=f"{__name__}.probe:saliency_summary",
    headlines=(Headline("saliency_precision", label="Grad-CAM mass on the object", short="saliency precision"),),
    pictures="examples",
    pictures_help="folder for saliency_overlays.png and saliency_examples/ (one overlay PNG per example, which the "
                  "report shows; default: a new probe_saliency_<time>/ beside the results store)",
    sections=(SectionSpec("saliency", "Saliency alignment (Grad-CAM)", f"{__name__}.section:saliency_section"),
              SectionSpec("saliency_gallery", "Most and least aligned Grad-CAM maps",
                          f"{__name__}.section:saliency_gallery", after="saliency")),
), package=__name__)
