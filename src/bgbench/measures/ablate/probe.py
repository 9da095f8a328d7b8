"""The ablation measure (RIVAL10 §4, `attr_importance.py`): its config and its class.

On each original image, the object, the background and (where the dataset has attribute masks:
RIVAL10, Synthetic-9) each attribute the image has are replaced with gray (0.5) (`engine`); the
per-image rows are (image_id, label, region, pred, correct, true_prob), region 'none' for the
clean image, 'fg', 'bg' or 'attr:<name>'. The summary recomputes the drops and their intervals
(`summary.summarize_ablation`) from the rows with no inference.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

from ... import checks
from ...classes import Mapping, mapping_field
from ...evaluation.metrics import REPLICATES
from ...data.facts import HARD_IMAGENET
from ..base import Attributes, BootstrapConfig, ModelMeasure
from ..examples import class_namer
from ..registry import BenchmarkHeadlines, InProfile, Headline, SectionSpec
from ..common.protocols import HARDIMAGENET, probe_protocol
from .summary import AblateRow, AblationSummary, summarize_ablation


@dataclass(kw_only=True)
class AblateConfig(BootstrapConfig):
    """How to ablate: how a 1000-class model's outputs decide (`mapping`)."""

    mapping: Mapping = mapping_field()

    def __post_init__(self):
        super().__post_init__()
        self.mapping = checks.member("--mapping", self.mapping, Mapping)


def hard_imagenet_copies(x, m):
    """Hard ImageNet's box-gray and tile copies of a batch (`hardimagenet`), made on the CPU in
    float32 as its code makes them, as (name, index, images) on the batch's device."""
    import numpy as np
    import torch

    from .hardimagenet import box_gray, tile_ablation
    images, masks = x.float().cpu().numpy(), m[:, 0].cpu().numpy() > 0.5
    boxes = np.stack([box_gray(img, mk) for img, mk in zip(images, masks)])
    tiled = [tile_ablation(img, mk) for img, mk in zip(images, masks)]
    every = torch.arange(x.shape[0], device=x.device)
    return [("bbox", every, torch.from_numpy(boxes).to(x.device, x.dtype)),
            ("tile", every, torch.from_numpy(np.stack([t for t, _ in tiled])).to(x.device, x.dtype))]


class AblateMeasure(ModelMeasure):
    """Attribute ablation (RIVAL10's attr_importance): the object, the background and each attribute
    replaced by gray; the drop in accuracy and in true-class probability, per region and class."""

    name = "ablate"
    position = 120
    source = ("RIVAL10 §4, `attr_importance.py`: each region grayed (x·(1−m) + 0.5·m) and the drops "
              "in accuracy and true-class probability. On Hard ImageNet's data, Hard ImageNet's "
              "`ablations.py` (mmoayeri/HardImageNet) as its code computes it: its ablations of the object "
              "are added, the box grayed (`replace_with_gray(keep_shape=False)`, the box's last row and "
              "column excluded as `get_bbox` excludes them) and the box tiled over (`tile`, quirks "
              "included: an instance whose chosen tile is empty becomes a black box, NumPy's division "
              "by zero there); its figures are each ablation's accuracy pooled over the images and "
              "mean true-class probability (`eval_under_ablation` at batch size 1, as "
              "`compute_ablated_accs` runs it: at larger batches its `probs[:, label]` mixes images), "
              "`clean_acc`/`ablated_acc` and `clean_prob`/`ablated_prob` here")
    checked_against = ("tests/measures/test_ablation.py (gray copies and drops by hand and by a "
                       "reimplementation; the rows against the model run in the test); "
                       "tests/measures/test_hardimagenet_probes.py (Hard ImageNet's `replace_with_gray`, `tile` "
                       "and `eval_under_ablation`, written out from `ablations.py` in "
                       "tests/helpers/hardimagenet_oracle.py, on a tree in its release layout: "
                       "the same copies pixel for pixel, the same accuracies and mean confidences)")
    title = "attribute ablation"
    needs = ("model", "masks")
    help = ("gray out the object, the background and each attribute: accuracy and true-class probability drops, "
            "per region and class")
    description = ("the object, the background and each attribute replaced by gray (RIVAL10); the drop in accuracy "
                   "and in true-class probability, per region and per class")
    data_help = "original/ and fg_mask/ (and attr_mask/ for attributes)"
    config = AblateConfig
    attributes = Attributes.OPTIONAL
    row = AblateRow
    key = ("image_id", "region")
    order = ("image_id",)
    headlines = (Headline("ablation_acc_drop", "bg", label="accuracy drop with the background grayed",
                          short="bg gray drop", higher_is_better=False, percent=True),
                 Headline("ablation_acc_drop", "fg", label="accuracy drop with the object grayed", percent=True,
                          short="object gray drop"))
    sections = (SectionSpec("ablation", "Attribute ablation (RIVAL10)", f"{__package__}.section:ablation_heatmap",
                            scope="page"),)
    benchmark_headlines = (BenchmarkHeadlines(HARD_IMAGENET, 20, replaces=True, headlines=(
        Headline("ablation_acc", "none", label="Hard ImageNet: accuracy of the unablated images (ablations.py's "
                 "'none')", percent=True, short="acc. clean"),
        Headline("ablation_acc", "fg", label="Hard ImageNet: accuracy with the object grayed (ablations.py): lower, "
                 "the less the rest of the image answers", percent=True, higher_is_better=False,
                 short="acc. object gray"),
        Headline("ablation_acc", "bbox", label="Hard ImageNet: accuracy with the object's box grayed (ablations.py)",
                 percent=True, higher_is_better=False, short="acc. box gray"),
        Headline("ablation_acc", "tile", label="Hard ImageNet: accuracy with the object's box tiled over by "
                 "background (ablations.py)", percent=True, higher_is_better=False, short="acc. box tiled"))),)
    profile = InProfile(50)

    def forwards(self, images, variants, options, attributes=0, classes=()):
        """Each image clean, with its object grayed and with its background grayed, and with each
        attribute it has grayed: with attributes, a ceiling (every image counted with every one)."""
        return images * (3 + attributes), attributes > 0

    def prepare(self, run):
        from ...evaluation.predict import class_probabilities, decide

        def score(x):
            logits = run.model(x)
            return decide(run.model, logits, run.cfg.mapping)[0], class_probabilities(run.model, logits)
        score.protocol = probe_protocol(run.layout)  # Hard ImageNet adds its box and tile ablations
        return score

    def launch(self, run, batch):
        """Each image clean ('none') and with each of its regions grayed (`engine`), queued on the
        device: the regions' names and images, and their outcomes on the way to the host."""
        import torch

        from ...evaluation.feed import Readback, to_device
        from ..common.regions import object_regions
        from .engine import ablation_outcomes
        score = run.state
        y = to_device(torch.as_tensor([it.label for it in batch.items]), batch.x.device)
        regions = object_regions(batch.m, batch.parts)
        ablated = hard_imagenet_copies(batch.x, batch.m) if score.protocol == HARDIMAGENET else []
        outcomes = ablation_outcomes(score, batch.x, regions, y, chunk=run.cfg.batch_size, ablated=ablated)
        copies = [("none", range(len(batch.items)))] + [(r.name, r.positions()) for r in regions] + \
            [(name, index) for name, index, _ in ablated]
        named, tensors = [], {}
        for k, (name, images) in enumerate(copies):
            tensors[f"preds{k}"], tensors[f"probs{k}"] = outcomes[name]
            if torch.is_tensor(images):  # Hard ImageNet's copies name their images on the device: read back too
                tensors[f"index{k}"], images = images, None
            named.append((name, images))
        return named, Readback(**tensors)

    def landed(self, run, batch, launched) -> List[AblateRow]:
        named, back = launched
        got = back.get()
        items = batch.items
        rows: List[AblateRow] = []
        for k, (name, positions) in enumerate(named):
            index = got[f"index{k}"].tolist() if positions is None else positions
            for i, pred, prob in zip(index, got[f"preds{k}"].tolist(), got[f"probs{k}"].tolist()):
                it = items[i]
                rows.append(AblateRow(it.image_id, it.label, name, int(pred), int(pred == it.label), float(prob)))
        return rows

    def recorded(self, run) -> dict:
        from .engine import GRAY
        source = run.sets.attributes
        return {"gray": GRAY, "attributes": list(source.names) if source is not None else [],
                "scoring": run.state.protocol}  # whose code it scores as; not a reference --protocol

    def outputs(self, run, result) -> dict:
        return {"regions": sorted({r.region for r in result.rows} - {"none"})}

    def summarize(self, rows, config: dict) -> AblationSummary:
        return summarize_ablation(rows, class_namer(config.get("classes") or []), seed=int(config.get("seed", 0)),
                                  replicates=int(config.get("bootstrap_replicates", REPLICATES)))
