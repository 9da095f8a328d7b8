"""The Spurious ImageNet measure: a 1000-class model's probability of each class on the release's
images of that class's spurious feature (no class object in them) and on the user's ImageNet val
images of the class; the score is their separation per class, averaged (`summary`).

Two arms, as the repository's `get_loaders` builds them: the spurious images (`--data`, the release,
`data.spurious_imagenet`) and every ImageNet val image of the classes they name
(`get_imagenet_matching_subset`, from `--imagenet` or `$BGBENCH_IMAGENET`). Each image's row keeps
its arm, class, the model's decision (its argmax over the 1000 classes, as `torch.max(probabilities)`
is there: another class than the dataset's is no class) and its score: the softmax probability, over
the 1000 outputs, of its class's ImageNet index (the probability mass `evaluation.predict` keeps
for each dataset class, which under a one-to-one class map is that one probability).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from ... import checks
from ...classes import Mapping
from ...data.facts import SPURIOUS_IMAGENET as KIND
from ...errors import BgbenchError
from ...evaluation.metrics import REPLICATES
from ...options import flag, runtime
from ...store.schema import TableRow
from ..arms import Arm, ArmsMeasure
from ..common.imagenet_reference import require_imagenet_model
from ..running import ProbeConfig
from ..registry import BenchmarkHeadlines, Headline, SectionSpec
from .summary import SPURIOUS, VAL, SpuriousSummary, summarize_spurious


@dataclass(kw_only=True)
class SpuriousConfig(ProbeConfig):
    """Where the user's ImageNet is (`imagenet`, default `$BGBENCH_IMAGENET`), and the seed and
    replicates of the bootstrap over classes behind the score's interval."""

    imagenet: Optional[str] = field(default=None, metadata=runtime(flag(
        "--imagenet", "your ImageNet (torchvision's ROOT/val/<wnid>/ or the ILSVRC release), whose val images of each "
        "class the spurious images are scored against (default: $BGBENCH_IMAGENET)", metavar="ROOT", type=str)))
    seed: int = field(default=0, metadata=flag("--seed", "seed of the bootstrap over classes behind the interval "
                                                         "(default %(default)s)"))
    bootstrap_replicates: int = REPLICATES

    @property
    def mapping(self) -> Mapping:
        """The decision the rows keep: the argmax over the 1000 classes, as the repository's
        `torch.max(probabilities[...], dim=1)` (never the superclass rule)."""
        return Mapping.ARGMAX

    def __post_init__(self):
        super().__post_init__()
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)


@dataclass(frozen=True, slots=True, order=True)
class SpuriousRow(TableRow):
    """One image of one arm: its class `label`, the model's decision `pred`, and `score`, the
    softmax probability of its class."""

    arm: str
    image_id: str
    label: int
    pred: int
    score: float


SCORE = Headline("spurious_score", label="Spurious ImageNet spurious score: per class, the AP separating its ImageNet "
                 "val images from its spurious-feature images by the class's probability, averaged (1: the "
                 "spurious feature alone never raises the class)", short="spurious score")
AUROC = Headline("spurious_auroc", label="Spurious ImageNet: the same separation as ROC AUC, averaged over classes",
                 short="spurious ROC AUC")


class SpuriousImageNetMeasure(ArmsMeasure):
    """Spurious ImageNet's spurious score (see the module docstring)."""

    name = "spurious_imagenet"
    position = 182
    source = ("Spurious ImageNet's `dataset/spurious_score.py` (YanNeu/spurious_imagenet, `calculate_spurious_score`, "
              "which `dataset/evaluate_model.py` runs): per class, scikit-learn's `average_precision_score` of the "
              "class's softmax probability, its ImageNet val images (1) against the release's images of its "
              "spurious feature (0), averaged over classes (`mean_auc_score`)")
    checked_against = ("tests/test_spurious_imagenet.py (an oracle written from `spurious_dataset.py`'s and "
                       "`spurious_score.py`'s definitions, on a generated release tree and ImageNet val)")
    title = "Spurious ImageNet (spurious score)"
    help = ("Spurious ImageNet: how well a class's probability separates its ImageNet val images from images of its "
            "spurious feature alone (mean AP over classes)")
    description = ("Spurious ImageNet's spurious score: per class, the average precision separating your ImageNet val "
                   "images of the class from the release's 75 images of its spurious feature without the object, by "
                   "the class's softmax probability; the mean over classes (1 is best)")
    data_help = "the Spurious ImageNet release (ROOT/images/timestamp.txt and its feature folders)"
    needs = ("model", "spurious_imagenet", "imagenet model")
    config = SpuriousConfig
    row = SpuriousRow
    headlines = (SCORE,)
    benchmark_headlines = (BenchmarkHeadlines(KIND, 10, replaces=True, headlines=(SCORE, AUROC)),)
    sections = (SectionSpec("spurious_imagenet", "Spurious ImageNet", f"{__package__}.section:spurious_section"),)

    def forwards(self, images, variants, options, attributes=0, classes=()):
        """One forward per image of the release and per ImageNet val image of its classes (the
        reference arm, counted in `imagenet` or $BGBENCH_IMAGENET); not known without the classes
        or where that folder cannot be read (the run then says why in one line)."""
        from ...data.spurious_imagenet import imagenet_val_of
        if not classes:
            return None, False
        try:
            reference = imagenet_val_of(classes, options.get("imagenet"))
        except BgbenchError:
            return None, False
        return images + len(reference.items("original")), False

    def arms(self, run, layout) -> List[Arm]:
        from ...data.spurious_imagenet import imagenet_val_of
        model, cfg = run.model, run.cfg
        if getattr(layout, "kind", "") != KIND:
            raise BgbenchError(f"spurious_imagenet reads the Spurious ImageNet release (ROOT/images/timestamp.txt and "
                               f"its feature folders); {layout.root} is not it")
        require_imagenet_model(model, self.name)
        return [Arm(VAL, imagenet_val_of(layout.classes, cfg.imagenet)), Arm(SPURIOUS, layout)]

    def arm_rows(self, arm, joined) -> List[SpuriousRow]:
        if joined.superclass_probs is None:
            raise BgbenchError(f"spurious_imagenet keeps each image's probability of its class, which a run over "
                               f"all 1000 classes does not store; {len(arm.layout.classes)} classes here")
        return [SpuriousRow(arm.name, i, int(label), int(pred), float(probs[label]))
                for i, label, pred, probs in zip(joined.image_ids, joined.labels.tolist(), joined.preds.tolist(),
                                                 joined.superclass_probs)]

    def recorded(self, run) -> dict:
        from ...data.imagenet import imagenet_synsets
        index = {w: k for k, w in enumerate(imagenet_synsets())}
        layout = run.layout
        return {"rule": "softmax probability of the class over the 1000 outputs; decision: argmax over the 1000",
                "class_indices": [index[w] for w in layout.classes], "timestamp": layout.timestamp,
                "feature_folders": sorted({image_id.partition("/")[0] for image_id in layout.features})}

    def summarize(self, rows: Sequence[SpuriousRow], config: dict) -> SpuriousSummary:
        classes = list(config.get("classes") or [])
        indices = list(config.get("class_indices") or range(len(classes)))
        return summarize_spurious(rows, classes, indices, seed=int(config.get("seed", 0)),
                                  replicates=int(config.get("bootstrap_replicates", REPLICATES)))
