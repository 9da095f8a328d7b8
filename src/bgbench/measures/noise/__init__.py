"""Noise sensitivity (RIVAL10): accuracy under foreground-only and background-only Gaussian noise,
and the relative foreground sensitivity (RFS); with region 'attributes', noise on each attribute."""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="noise sensitivity (RFS)",
    name="noise", kind="probe_noise", needs=("model", "masks"), table="probe_noise",
    help="Gaussian noise on the foreground vs the background: accuracy curves and RFS",
    description="accuracy under foreground-only and background-only noise, and RFS; with `--region attributes`, "
                "under noise on each attribute's mask alone",
    config=f"{__name__}.probe:NoiseConfig", compute=f"{__name__}.probe:probe_noise",
    read=f"{__name__}.probe:noise_summary",
    headlines=(Headline("rfs", label="RFS (> 0: foreground noise hurts more)", short="RFS"),),
    sections=(SectionSpec("noise", "Noise sensitivity (RIVAL10)", f"{__name__}.section:noise_section"),
              SectionSpec("noise_gallery", "Images that noise flips first", f"{__name__}.section:noise_gallery",
                          after="noise")),
), package=__name__)
