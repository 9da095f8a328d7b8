"""Evaluation on the variants: accuracy per variant with Wilson intervals, and the BG-Gap.

The same run is the headline of other benchmarks read as released: ImageNet-D's accuracy per
nuisance (its variants are its nuisance folders, `data.imagenet_d`; background first),
Spawrious' test accuracy with its (breed, location) groups (`data.spawrious`, variant original),
Waterbirds' average and worst-group accuracy as `wilds` computes them (`data.waterbirds`,
`waterbirds`), which take the place of its own headlines in the scorecard on Waterbirds' data, the
ImageNet-E release's top-1 per edit level (Table 1; the drops are the edits measure's) and
CounterAnimal's common − counter gap, overall and per class (`counter_gap`).

Its run (`runner`) writes every image's prediction to the `predictions` table (batched prediction,
`evaluation.predict`, shared with the challenge and the probes), which every analysis reads;
`bgbench eval` is its command.
"""
from ...data.facts import COUNTERANIMAL, IMAGENET_E, IMAGENET_E_COLUMN_OF as COLUMN_OF, WATERBIRDS
from ..registry import BenchmarkHeadlines, InProfile, ShortcutColumn, Command, Headline, SectionSpec, register_measure
from ..running import RunningMeasure
from .counter_gap import METRIC as COUNTER_GAP

#: On the ImageNet-E release, Table 1's top-1 of each edited level (ORIGINAL's is eval's own `clean`;
#: each level's drop from it is the edits' column beside it).
IMAGENET_E_HEADLINES = BenchmarkHeadlines(IMAGENET_E, 40, headlines=tuple(
    Headline("accuracy", variant, label=f"top-1 on ImageNet-E's {column} images (Table 1)", percent=True,
             short=f"top-1 {variant}") for variant, column in COLUMN_OF.items() if variant != "original"))
#: On CounterAnimal, the paper's gap and the two accuracies it is the difference of.
COUNTERANIMAL_HEADLINES = BenchmarkHeadlines(COUNTERANIMAL, 40, headlines=(
    Headline(COUNTER_GAP, label="CounterAnimal's gap: accuracy on the common backgrounds minus on the counter ones",
             higher_is_better=False, percent=True, short="common − counter"),
    Headline("accuracy", "common", label="accuracy on CounterAnimal's common backgrounds", percent=True,
             short="common"),
    Headline("accuracy", "counter", label="accuracy on CounterAnimal's counter backgrounds", percent=True,
             short="counter")))


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
              "`spawrious/torch.py` builds, with worst-group accuracy over its (breed, location) groups; on Waterbirds (Sagawa et al., ICLR "
              "2020), `wilds`' `WaterbirdsDataset.eval`: average accuracy with the groups weighted by the "
              "training split (`adj_acc_avg`) and worst-group accuracy (`acc_wg`); on the "
              "ImageNet-E release (Li et al., CVPR 2023), the top-1 of each level of its Table 1; on CounterAnimal "
              "(Wang et al., NeurIPS 2024), accuracy on the common backgrounds minus on the counter ones, overall "
              "and per class, as the paper defines it (its authors publish no scoring code)")
    checked_against = ("tests/test_metrics.py (Wilson intervals against published values; the "
                       "paired BG-Gap bootstrap), tests/test_classes.py (370 classes map, 630 do "
                       "not; known rows of the upstream table), tests/test_benchmarks.py (ImageNet-D's "
                       "`ImageNetDLoader` and `test_model`, and Spawrious' `SpawriousBenchmark` data lists and "
                       "`evaluate`, written out from their definitions in the test, on generated trees and the "
                       "run's stored "
                       "predictions), tests/test_waterbirds.py (the `wilds` package's `WaterbirdsDataset.eval` "
                       "on the stored predictions of a generated tree in the WILDS release layout) and "
                       "tests/test_releases.py (the ImageNet-E and CounterAnimal releases as "
                       "the code that reads them reads them, Table 1 and the common − counter gap written out in "
                       "the test)")
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
    benchmark_headlines = (IMAGENET_E_HEADLINES, COUNTERANIMAL_HEADLINES, BenchmarkHeadlines(
        WATERBIRDS, 10, replaces=True, headlines=(
        Headline("adj_acc_avg", "original", label="average accuracy, each (bird, place) group weighted by its share "
                 "of Waterbirds' training split (wilds' adj_acc_avg)", percent=True, short="average acc."),
        Headline("acc_wg", "original", label="worst-group accuracy over the (bird, place) groups (wilds' acc_wg)",
                 percent=True, short="worst-group acc."))))

    def headline(self, metrics):
        """On CounterAnimal, where none of its own headlines is measured, the run's gap."""
        if metrics.get((COUNTER_GAP, "")) is not None:
            return COUNTERANIMAL_HEADLINES.headlines[0].show(metrics[(COUNTER_GAP, "")])
        return super().headline(metrics)

    def forwards(self, images, variants, options, attributes=0, classes=()):
        """One forward per image of each variant it reads."""
        return images * len(options.get("variants") or variants), False

    def reads(self, cfg, data, given):
        """The requested variants (every variant of the data by default); those the data lacks but a
        renderer computes are read from `original` (`runner.variants_on_disk`)."""
        from .runner import variants_on_disk
        return {"variants": variants_on_disk(data, cfg, given.get("renderers") or {}), "split": cfg.split}

    def image_sets(self, run):
        """The variants it predicts (`runner.eval_sets`)."""
        from .runner import eval_sets
        return eval_sets(run.layout, run.cfg, run.given.get("renderers") or {})

    def measure(self, run):
        """Every variant's predictions, and the report (`runner.eval_run`)."""
        from .runner import eval_run
        return eval_run(run)


MEASURE = register_measure(Eval)
