"""Evaluation on the variants: accuracy per variant with Wilson intervals, and the BG-Gap.

The same run is the headline of two other benchmarks read as released: ImageNet-D's accuracy per
nuisance (its variants are its nuisance folders, `data.imagenet_d`; background first) and
Spawrious' test accuracy with its (breed, location) groups (`data.spawrious`, variant original).

Its run (`runner`) writes every image's prediction to the `predictions` table (batched prediction,
`evaluation.predict`, shared with the challenge and the probes), which every analysis reads;
`bgbench eval` is its command.
"""
from ..declarations import InProfile, ShortcutColumn
from ..registry import Command, Headline, SectionSpec, register_measure
from ..running import RunningMeasure


class Eval(RunningMeasure):
    name = "eval"
    position = 10
    source = ("Xiao et al., *Noise or Signal* (ICLR 2021), §3: accuracy on each IN-9 variant and "
              "BG-Gap = acc(MIXED-SAME) − acc(MIXED-RAND); a 1000-class model's argmax mapped by "
              "upstream's `in_to_in9.json` (MadryLab/backgrounds_challenge). On ImageNet-D (Zhang et al., "
              "CVPR 2024), the top-1 accuracy per nuisance of chenshuang-zhang/imagenet_d's "
              "`evaluate_imagenet_models.py` (right when the top-1 ImageNet class is one its "
              "`preprocessing/imgnet_d2imgnet_id.txt` lists for the folder); on Spawrious (Lynch et al., "
              "2023), the test accuracy of aengusl/spawrious' `example.py` `evaluate` over the sets "
              "`spawrious/torch.py` builds, with worst-group accuracy over its (breed, location) groups")
    checked_against = ("tests/test_metrics.py (Wilson intervals against published values; the "
                       "paired BG-Gap bootstrap), tests/test_classes.py (370 classes map, 630 do "
                       "not; known rows of the upstream table) and tests/test_benchmarks.py (ImageNet-D's "
                       "`ImageNetDLoader` and `test_model`, and Spawrious' `SpawriousBenchmark` data lists and "
                       "`evaluate`, written out from their definitions in the test, on generated trees and the "
                       "run's stored "
                       "predictions)")
    title = "accuracy and BG-Gap"
    command = Command.OWN
    needs = ("model",)
    table_name = "predictions"
    help = "accuracy per variant with 95% intervals, and the BG-Gap (MIXED-SAME minus MIXED-RAND)"
    headlines = (Headline("bg_gap", label="BG-Gap", higher_is_better=False, percent=True),
                 Headline("accuracy", "original", label="ORIGINAL accuracy", percent=True, short="clean"),
                 Headline("accuracy", "background", label="accuracy on ImageNet-D's background images", percent=True,
                          short="background"),
                 Headline("accuracy", "texture", label="accuracy on ImageNet-D's texture images", percent=True,
                          short="texture"),
                 Headline("accuracy", "material", label="accuracy on ImageNet-D's material images", percent=True,
                          short="material"))
    sections = (SectionSpec("accuracy", "Accuracy per variant and BG-Gap", f"{__name__}.section:accuracy_section"),)
    shortcut_columns = (
        ShortcutColumn(10, "in1k_acc", "IN-1k acc", "accuracy", "original", data="imagenet", shortcut=False,
                       change=f"{__name__}.changes:shortcut_change"),
        ShortcutColumn(70, "bg_gap", "BG-Gap", "bg_gap", higher_is_better=False, data="other", shortcut=False,
                       change=f"{__name__}.changes:shortcut_change"))
    profile = InProfile(10)

    def forwards(self, images, variants, options, attributes=0):
        """One forward per image of each variant it reads."""
        return images * len(options.get("variants") or variants), False

    def image_sets(self, run):
        """The variants it predicts (`runner.eval_sets`)."""
        from .runner import eval_sets
        return eval_sets(run.data, run.cfg, run.given.get("renderers") or {})

    def measure(self, run):
        """Every variant's predictions, and the report (`runner.eval_run`)."""
        from .runner import eval_run
        return eval_run(run)


MEASURE = register_measure(Eval)
