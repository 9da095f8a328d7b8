"""Evaluation on the variants: accuracy per variant with Wilson intervals, and the BG-Gap.

Its run (`runner`) writes every image's prediction to the `predictions` table (batched prediction,
`evaluation.predict`, shared with the challenge and the probes), which every analysis reads;
`bgbench eval` is its command.
"""
from ..registry import Command, Headline, Measure, SectionSpec, register_measure


class Eval(Measure):
    name = "eval"
    source = ("Xiao et al., *Noise or Signal* (ICLR 2021), §3: accuracy on each IN-9 variant and "
              "BG-Gap = acc(MIXED-SAME) − acc(MIXED-RAND); a 1000-class model's argmax mapped by "
              "upstream's `in_to_in9.json` (MadryLab/backgrounds_challenge)")
    checked_against = ("tests/test_metrics.py (Wilson intervals against published values; the "
                       "paired BG-Gap bootstrap) and tests/test_classes.py (370 classes map, 630 do "
                       "not; known rows of the upstream table)")
    title = "accuracy and BG-Gap"
    command = Command.OWN
    needs = ("model",)
    table_name = "predictions"
    help = "accuracy per variant with 95% intervals, and the BG-Gap (MIXED-SAME minus MIXED-RAND)"
    headlines = (Headline("bg_gap", label="BG-Gap", higher_is_better=False, percent=True),
                 Headline("accuracy", "original", label="ORIGINAL accuracy", percent=True, short="clean"))
    sections = (SectionSpec("accuracy", "Accuracy per variant and BG-Gap", f"{__name__}.section:accuracy_section"),)

    def forwards(self, images, variants, options, attributes=0):
        """One forward per image of each variant it reads."""
        return images * len(options.get("variants") or variants), False


MEASURE = register_measure(Eval)
