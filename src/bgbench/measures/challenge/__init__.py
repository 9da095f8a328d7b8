"""The Backgrounds Challenge: a foreground counts as robust only if no background fools it.

Its engine (exact verdicts of upstream's `challenge_eval.py`, resumable, sharded), its sampling,
summary, --full matrix analyses and report sections all live in this package; `bgbench challenge`
is its command.
"""
from ..registry import Headline, Measure, SectionSpec, register_measure


class Challenge(Measure):
    name = "challenge"
    title = "Backgrounds Challenge"
    command = "own"
    needs = ("model", "masks")
    table_name = "challenge_fg"
    help = "the Backgrounds Challenge: accuracy when every background may be pasted behind each foreground"
    headlines = (Headline("challenge_accuracy", label="challenge accuracy", percent=True, short="challenge"),)
    sections = (SectionSpec("challenge", "Backgrounds Challenge", f"{__name__}.section:challenge_section"),
                SectionSpec("challenge_gallery", "Foregrounds the most backgrounds fool",
                            f"{__name__}.section:challenge_gallery", after="challenge"),
                SectionSpec("hijack", "Background hijack matrix", f"{__name__}.section:hijack_section",
                            after="challenge_gallery"))


MEASURE = register_measure(Challenge)
