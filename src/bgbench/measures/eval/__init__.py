"""Evaluation on the variants: accuracy per variant with Wilson intervals, and the BG-Gap.

The engine is `evaluation` (batched prediction into the `predictions` table, shared with the
challenge and the analyses); `bgbench eval` is its command.
"""
from ..registry import Headline, Measure, SectionSpec, register_measure

MEASURE = register_measure(Measure(
    title="accuracy and BG-Gap",
    name="eval", kind="eval", command="own", needs=("model",), table="predictions",
    help="accuracy per variant with 95% intervals, and the BG-Gap (MIXED-SAME minus MIXED-RAND)",
    headlines=(Headline("bg_gap", label="BG-Gap", higher_is_better=False, percent=True),
               Headline("accuracy", "original", label="ORIGINAL accuracy", percent=True, short="clean")),
    sections=(SectionSpec("accuracy", "Accuracy per variant and BG-Gap", f"{__name__}.section:accuracy_section"),),
), package=__name__)
