"""The Backgrounds Challenge: a foreground counts as robust only if no background fools it.

Its engine (exact verdicts of upstream's `challenge_eval.py`, resumable, sharded), its sampling,
summary, --full matrix analyses and report sections all live in this package; `bgbench challenge`
is its command.
"""
from ..registry import InProfile, ShortcutColumn
from ..registry import Command, Headline, SectionSpec, register_measure
from ..running import RunningMeasure


class Challenge(RunningMeasure):
    name = "challenge"
    position = 20
    source = ("the Backgrounds Challenge (MadryLab/backgrounds_challenge): a foreground is fooled "
              "when any ONLY-BG-T background makes the composite B·(1−m) + F·m predicted as another "
              "class")
    checked_against = ("tests/measures/test_challenge.py (verdicts equal an exhaustive reference "
                       "for any batch size, order and number of processes) and "
                       "test_challenge_precision.py (bf16-verified against an fp32 oracle of "
                       "upstream's arithmetic, composite by composite)")
    title = "Backgrounds Challenge"
    command = Command.OWN
    needs = ("model", "masks", "backgrounds")
    table_name = "challenge_fg"
    opened = True  # its verdicts are stored as they come, under the provenance its run opens with
    help = "the Backgrounds Challenge: accuracy when every background may be pasted behind each foreground"
    headlines = (Headline("challenge_accuracy", label="challenge accuracy", percent=True, short="challenge"),)
    sections = (SectionSpec("challenge", "Backgrounds Challenge", f"{__name__}.section:challenge_section"),
                SectionSpec("challenge_gallery", "Foregrounds the most backgrounds fool",
                            f"{__name__}.section:challenge_gallery", after="challenge"),
                SectionSpec("hijack", "Background hijack matrix", f"{__name__}.section:hijack_section",
                            after="challenge_gallery"))
    shortcut_columns = (ShortcutColumn(80, "challenge_acc", "challenge acc", "challenge_accuracy", data="other",
                                       shortcut=False, change=f"{__name__}.changes:shortcut_change"),)
    profile = InProfile(20, {"sample": 100})

    def forwards(self, images, variants, options, attributes=0, classes=()):
        """A ceiling: each foreground (all, or `sample` of them) clean, then against every
        background; a foreground stops at the first background that fools it."""
        fg = images if options.get("sample") is None else min(images, int(options["sample"]))
        return fg * images + fg, True

    def reads(self, cfg, data, given):
        """The originals, their masks and ONLY-BG-T of an IN-9 layout (no further sets)."""
        return {"variants": ["original", "only_bg_t"], "in9": True}

    def measure(self, run):
        """The challenge's engine, search and resumable store (`runner.challenge_run`)."""
        from .runner import challenge_run
        return challenge_run(run)


MEASURE = register_measure(Challenge)
