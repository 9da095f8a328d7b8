"""The Backgrounds Challenge: a foreground counts as robust only if no background fools it.

The engine is `evaluation.challenge` (exact verdicts, resumable, sharded); `bgbench challenge`
is its command; this package holds its report sections and the hijack matrix of `--full` runs.
"""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="Backgrounds Challenge",
    name="challenge", kind="challenge", command="own", needs=("model", "masks"), table="challenge_fg",
    help="the Backgrounds Challenge: accuracy when every background may be pasted behind each foreground",
    headlines=(Headline("challenge_accuracy", label="challenge accuracy", percent=True, short="challenge"),),
    sections=(SectionSpec("challenge", "Backgrounds Challenge", f"{__name__}.section:challenge_section"),
              SectionSpec("challenge_gallery", "Foregrounds the most backgrounds fool",
                          f"{__name__}.section:challenge_gallery", after="challenge"),
              SectionSpec("hijack", "Background hijack matrix", f"{__name__}.section:hijack_section",
                          after="challenge_gallery")),
), package=__name__)
