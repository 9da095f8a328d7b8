"""The Salient ImageNet measure: a 1000-class model's accuracy on each annotated class's images,
clean and with Gaussian noise on the class's core or on its spurious regions (the soft masks of the
release, `data.salient_imagenet`), as the repository's `evaluate_sensitivity_*` notebooks run
`compute_noisy_acc` (`summary`).

Per class, as the notebooks loop: the core features of the class (the Mechanical Turk table's
labels, `read_annotations`), their images (every name their columns list) and each image's mask
(the maximum over those of its features) fed clean and as `clamp(x + (0 + σ·n)·m, 0, 1)`, σ = 0.25
(`noise_stds_list`), n standard normal per pixel and channel; then the same for its spurious
features. The decision is the argmax over the 1000 outputs, right when it is the class's index.

The repository draws n with `torch.randn` on the GPU, unseeded; here each image's draw for each
target has its own seed, so that a run repeats and does not depend on the batch, the device or
torchrun's slice: the first 8 bytes (little-endian, shifted right once) of sha256 of
'<seed>\\0<image id>\\0<core|spurious>', given to `torch.Generator().manual_seed`, drawing
`torch.randn(3, 224, 224)` on the CPU. The images come through the feed like every probe's; the soft
masks (which the feed's binary object masks are not) are read per batch on the host.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ... import checks
from ...data.facts import SALIENT_IMAGENET as KIND
from ...errors import BgbenchError
from ...evaluation.metrics import REPLICATES
from ...options import flag, runtime
from ...store.schema import TableRow
from ..common.imagenet_reference import require_imagenet_model
from ..running import ProbeConfig, RunningMeasure
from ..registry import BenchmarkHeadlines, Command, Headline, SectionSpec
from ..result import MeasureResult
from .summary import CORE, SPURIOUS, SalientSummary, summarize_salient

#: `noise_stds_list` of the notebooks.
NOISE_STD = 0.25


@dataclass(kw_only=True)
class SalientConfig(ProbeConfig):
    """The noise's standard deviation, the seed of its draws and of the bootstrap over classes, and
    where the Mechanical Turk table and the user's ImageNet are."""

    noise_std: float = field(default=NOISE_STD, metadata=flag(
        "--noise-std", "standard deviation of the Gaussian noise on the regions ([0,1] pixels; the notebooks' "
        "%(default)s)"))
    seed: int = field(default=0, metadata=flag("--seed", "seed of the noise draws and of the bootstrap over classes "
                                                         "(default %(default)s)"))
    annotations: Optional[str] = field(default=None, metadata=flag(
        "--annotations", "the repository's mturk_results/discover_spurious_features.csv (default: that file in the "
        "release's folder, or in its mturk_results/)", metavar="FILE", type=str))
    imagenet: Optional[str] = field(default=None, metadata=runtime(flag(
        "--imagenet", "your ImageNet (torchvision's ROOT/train/<wnid>/ or the ILSVRC release), whose training images "
        "the masks are drawn on (default: $BGBENCH_IMAGENET)", metavar="ROOT", type=str)))
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        super().__post_init__()
        checks.at_least("--noise-std", self.noise_std, 0)
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)


@dataclass(frozen=True, slots=True, order=True)
class SalientRow(TableRow):
    """One image of one class with noise on its `noise_on` ('core' or 'spurious') regions: the
    model's ImageNet class (argmax over the 1000) clean and noisy."""

    noise_on: str
    image_id: str
    label: int
    clean_pred: int
    noisy_pred: int


CORE_ACC = Headline("salient_core_accuracy", label="Salient ImageNet core accuracy: accuracy with noise on the "
                    "spurious regions, mean over classes", percent=True, short="core accuracy")
SPURIOUS_ACC = Headline("salient_spurious_accuracy", label="Salient ImageNet spurious accuracy: accuracy with noise on "
                        "the core regions, mean over classes (lower: less is left to spurious features)",
                        percent=True, higher_is_better=False, short="spurious accuracy")
HEADLINES = (CORE_ACC, SPURIOUS_ACC,
             Headline("salient_accuracy_drop", SPURIOUS, label="Salient ImageNet: accuracy drop with noise on the "
                      "spurious regions", percent=True, higher_is_better=False, short="drop, noise on spurious"),
             Headline("salient_accuracy_drop", CORE, label="Salient ImageNet: accuracy drop with noise on the core "
                      "regions (higher: the model needs the core)", percent=True, short="drop, noise on core"))


def draw_seed(seed: int, image_id: str, target: str) -> int:
    """The seed of one image's noise for one target (see the module docstring)."""
    digest = hashlib.sha256(f"{int(seed)}\x00{image_id}\x00{target}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") >> 1


class SalientImageNetMeasure(RunningMeasure):
    """Salient ImageNet's sensitivity to noise on core against spurious regions (see the module docstring)."""

    name = "salient_imagenet"
    command = Command.PROBE
    position = 184
    source = ("Salient ImageNet's `evaluate_sensitivity_core_features.ipynb` and "
              "`evaluate_sensitivity_spurious_features.ipynb` (singlasahil14/salient_imagenet), through "
              "`inspection_utils.py`'s `SalientImageNet` and `compute_noisy_acc` and `utils.py`'s `MTurk_Results`: "
              "per annotated class, accuracy clean and with Gaussian noise (std 0.25) on its core or its spurious "
              "masks; the means over classes")
    checked_against = ("tests/test_salient_imagenet.py (an oracle written from `inspection_utils.py`'s and "
                       "`utils.py`'s definitions, on a generated release tree over a generated ImageNet train)")
    title = "Salient ImageNet (core and spurious accuracy)"
    help = ("Salient ImageNet: accuracy with Gaussian noise on each class's core regions against noise on its spurious "
            "regions (its soft masks, over your ImageNet's train images)")
    description = ("Salient ImageNet's noise sensitivity: per annotated class, accuracy clean and with Gaussian noise on "
                   "its core masks (spurious accuracy) or its spurious masks (core accuracy), averaged over classes")
    data_help = "the Salient ImageNet release (wordnet_dict.py and its class folders), over $BGBENCH_IMAGENET"
    needs = ("model", "salient_imagenet", "imagenet model")
    config = SalientConfig
    row = SalientRow
    key = ("noise_on", "image_id")
    headlines = (CORE_ACC, SPURIOUS_ACC)
    benchmark_headlines = (BenchmarkHeadlines(KIND, 10, replaces=True, headlines=HEADLINES),)
    sections = (SectionSpec("salient_imagenet", "Salient ImageNet", f"{__package__}.section:salient_section"),)

    def forwards(self, images, variants, options, attributes=0, classes=()):
        """Two forwards (clean, noisy) per image of each annotated set: at most 4 per image (an image
        a core and a spurious feature both list is in both sets)."""
        return 4 * images, True

    def reads(self, cfg, data, given):
        """The release, over the user's ImageNet (--imagenet, else $BGBENCH_IMAGENET)."""
        return {"variants": None, "imagenet": cfg.imagenet}

    def image_sets(self, run):
        from ...data.salient_imagenet import find_annotations, read_annotations
        model, cfg, layout = run.model, run.cfg, run.layout
        if getattr(layout, "kind", "") != KIND:
            raise BgbenchError(f"salient_imagenet reads the Salient ImageNet release (wordnet_dict.py and its class "
                               f"folders); {layout.root} is not it")
        require_imagenet_model(model, self.name)
        path = find_annotations(layout.root, cfg.annotations)
        position = {index: k for k, index in enumerate(layout.class_indices)}
        sets = []
        for target, labelled in zip((CORE, SPURIOUS), read_annotations(path)):
            for index, features in sorted(labelled.items()):
                if index not in position:
                    raise BgbenchError(f"{path} labels features of ImageNet class {index}, which {layout.root} has no "
                                       f"folder of (the notebooks evaluate every annotated class)")
                label = position[index]
                wnid = layout.classes[label]
                columns = layout.features[wnid]
                absent = [f for f in features if f not in columns]
                if absent:
                    raise BgbenchError(f"{layout.root / wnid / 'image_names_map.csv'} has no column for feature "
                                       f"{absent[0]}, which {path.name} labels {target}")
                sets.append((target, label, wnid, tuple(features)))
        return {"sets": sets, "annotations": str(path)}

    def measure(self, run):
        """Every (target, class) set's images in the notebooks' order, read through the feed (the
        pixel cache, whole batches per torchrun rank, gathered in order on rank 0); each batch's soft
        masks and noise are made on the host from its images' positions."""
        import torch

        from ...data.layout import Item
        from ...data.pixel_cache import pixels_of
        from ...data.salient_imagenet import CROP, RESIZE
        from ...evaluation.feed import Images, batches, gathered
        from ...evaluation.numerics import forward_context
        layout, cfg = run.layout, run.cfg
        jobs = [(target, label, wnid, features, name) for target, label, wnid, features in run.sets["sets"]
                for name in sorted({n for f in features for n in layout.features[wnid][f]})]
        items = [Item(image_id=f"{wnid}/{name}", label=label, path=layout.image_path(wnid, name), crop=(RESIZE, CROP))
                 for _, label, wnid, _, name in jobs]
        images = Images.of(pixels_of(items), cfg.batch_size)
        out: Dict[int, List[SalientRow]] = {}
        with torch.inference_mode(), forward_context(getattr(cfg, "precision", "fp32"), run.device):
            for k, batch in batches(images, device=run.device, workers=cfg.workers, ranks=run.ranks,
                                    progress=run.progress and run.ranks.main, desc=f"{self.name} probe"):
                done = len(out.get(k, []))  # a batch cut where the image size changes comes in two parts
                mine = [jobs[p] for p in images.chunks[k][done:done + len(batch.items)]]
                m, n = self._masks_and_noise(layout, cfg, mine)
                noisy = torch.clamp(batch.x + (0.0 + cfg.noise_std * n.to(run.device)) * m.to(run.device), 0.0, 1.0)
                clean_pred = run.model(batch.x).float().argmax(dim=1).tolist()
                noisy_pred = run.model(noisy).float().argmax(dim=1).tolist()
                out.setdefault(k, []).extend(SalientRow(target, f"{wnid}/{name}", label, int(c), int(p))
                                             for (target, label, wnid, _, name), c, p in
                                             zip(mine, clean_pred, noisy_pred))
        rows = gathered(out, len(images.chunks), run.ranks)
        if rows is None:
            return None
        config = self.run_config(cfg, layout, run.ranks, own=self.recorded(run),
                                 images=len({r.image_id for r in rows}))
        return MeasureResult(self.name, rows, config, seconds=run.elapsed()), config

    @staticmethod
    def _masks_and_noise(layout, cfg, jobs):
        """(N,3,224,224) masks (`salient_mask` of each image's features, a one-channel mask
        repeated over the channels as the noise's broadcast does) and noise draws of `jobs`."""
        import torch

        from ...data.salient_imagenet import CROP, salient_mask
        masks, noise = [], []
        for target, _, wnid, features, name in jobs:
            columns = layout.features[wnid]
            mask = torch.from_numpy(salient_mask([layout.mask_path(wnid, f, name) for f in features
                                                  if name in columns[f]]))
            masks.append(mask.expand(3, -1, -1) if mask.shape[0] == 1 else mask)
            g = torch.Generator().manual_seed(draw_seed(cfg.seed, f"{wnid}/{name}", target))
            noise.append(torch.randn(3, CROP, CROP, generator=g))
        return torch.stack(masks), torch.stack(noise)

    def recorded(self, run) -> dict:
        sets = run.sets
        return {"rule": "argmax over the 1000 outputs == the class's index; noise clamp(x + (0 + std*n)*m, 0, 1)",
                "class_indices": list(run.layout.class_indices), "annotations": sets["annotations"],
                "draws": "per image and target: sha256(seed, image id, target) -> torch.Generator, randn(3, 224, 224)",
                "noise_on": {t: sum(1 for s in sets["sets"] if s[0] == t) for t in (CORE, SPURIOUS)}}

    def summarize(self, rows: Sequence[SalientRow], config: dict) -> SalientSummary:
        classes = list(config.get("classes") or [])
        indices = list(config.get("class_indices") or range(len(classes)))
        return summarize_salient(rows, classes, indices, noise_std=float(config.get("noise_std", NOISE_STD)),
                                 seed=int(config.get("seed", 0)),
                                 replicates=int(config.get("bootstrap_replicates", REPLICATES)))


__all__ = ["SalientImageNetMeasure", "draw_seed"]
