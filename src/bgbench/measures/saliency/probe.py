"""The saliency probe (RIVAL10): runner (I/O) and the summary of a stored probe run.

Grad-CAM on the predicted class (`saliency_cam`: Captum, post-processed as pytorch-grad-cam
returns it), RIVAL10's alignment measures per image (`saliency_metrics`), aggregated by predicted
class as RIVAL10 does and over images (`saliency_summary`), and a PNG of the most and least
aligned images per predicted class (`saliency_overlays`) when an output folder is given.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar, List, Optional

import numpy as np

from ... import checks
from ...options import flag, runtime
from ..result import MeasureResult, stored_summary
from .table import TABLE
from ...store import Store
from ...probing.bootstrap import REPLICATES
from ...probing.gradcam import default_layer, gradcam_batch, resolve_layer  # noqa: F401 (re-exported)
from .metrics import METRICS, saliency_alignment
from .summary import SaliencySummary, class_namer, summarize_saliency
from ...data.prefetch import workers_field

OVERLAYS_FILE = "saliency_overlays.png"
#: The folder (beside OVERLAYS_FILE) with one overlay PNG per example, for the report's gallery.
EXAMPLES_FOLDER = "saliency_examples"


@dataclass
class SaliencyConfig:
    layer: Optional[str] = field(default=None, metadata=flag(
        "--layer", "Grad-CAM layer, a module path inside the network (default: a ViT's last block's norm1, else the "
        "last feature stage of a timm model, else the last convolution)", type=str))
    batch_size: int = field(default=32, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    examples: int = field(default=4, metadata=flag(
        "--examples", "overlay images per predicted class: the most, then the least aligned by precision; 0: no PNG "
        "(default %(default)s)"))
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the bootstrap over images behind the intervals (default %(default)s)"))
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--examples", self.examples, 0)
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)


@dataclass
class SaliencyResult(MeasureResult):
    """rows: (image_id, label, pred, *METRICS), one per image; the overlays written, if any."""

    layer: str = ""
    overlays: Optional[str] = None
    examples: List[dict] = field(default_factory=list)  # one per example overlay: see write_example_overlays
    out_dir: Optional[str] = None

    measure: ClassVar[str] = "saliency"

    def summarize(self) -> SaliencySummary:
        return summary_of(self.rows, self.config)

    def extra_outputs(self) -> dict:
        return {"layer": self.layer, "overlays": self.overlays, "folder": self.out_dir, "examples": self.examples}

    def table(self) -> str:
        text = self.summary().table(self.layer)
        return text + (f"\nexample overlays: {self.overlays}" if self.overlays else "")



def summary_of(rows, config: dict) -> SaliencySummary:
    """The summary of per-image rows under the run's config (classes, label space, bootstrap)."""
    values = {m: np.array([np.nan if r[3 + k] is None else r[3 + k] for r in rows], dtype=np.float64)
              for k, m in enumerate(METRICS)}
    name = class_namer(config.get("classes") or [], config.get("label_space", "dataset") == "dataset")
    return summarize_saliency(values, [r[2] for r in rows], name, seed=int(config.get("seed", 0)),
                              replicates=int(config.get("bootstrap_replicates", REPLICATES)))


def saliency_summary(store: Store, run_id: int) -> SaliencySummary:
    """The summary of a stored probe_saliency run, recomputed from its per-image table."""
    return stored_summary(store, run_id, "probe_saliency", TABLE, summary_of)


def probe_saliency(model, data, cfg: SaliencyConfig, out_dir: Optional[str | Path] = None, progress: bool = True,
                   limit: Optional[int] = None) -> Optional[SaliencyResult]:
    """Grad-CAM alignment of `model` on the originals and masks of `data`; with `out_dir`, the
    overlay PNG is written there (nothing is written without it).

    Under torchrun the ranks share the images (`sharding.ProbeShard`); rank 0 returns the result
    of one process and draws the overlays, the other ranks return None.
    """
    from ... import console
    from ...data.resolve import resolve_layout
    from ...distributed import setup, world_record
    from ...models.spec import meet_data
    from ...recording import Provenance
    from ...probing.batches import masked_batches
    from ...probing.sharding import ProbeShard

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    meet_data(model, layout)
    shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
    device = shard.ranks.device  # under NCCL, this rank's GPU
    model = model.to(device).eval()
    layer_name, layer = resolve_layer(model, cfg.layer)
    bar = console.progress(enabled=progress and shard.ranks.main, total=len(shard.pairs), desc="saliency probe",
                           unit="img")
    for items, x, m in masked_batches(shard.pairs, cfg.batch_size, device, cfg.workers):
        maps, preds = gradcam_batch(model, layer, x)
        preds, masks = preds.cpu().numpy(), m[:, 0].cpu().numpy() > 0.5
        shard.add(items, [(it.image_id, it.label, int(preds[k]),
                           *(_sql(v) for v in _measures(maps[k], masks[k]))) for k, it in enumerate(items)])
        bar.update(len(items))
    bar.close()
    rows = shard.gathered()
    if rows is None:
        return None
    config = {**asdict(cfg), "layer": layer_name, "requested": {"layer": cfg.layer}, "split": layout.split,
              "images": len(pairs),
              "label_space": model.spec.label_space, "classes": list(layout.classes),
              "cam": "pytorch-grad-cam GradCAM output (min-max, cv2 bilinear resize, min-max, NaN to 0)",
              **world_record(shard.ranks)}
    result = SaliencyResult(rows=rows, config=config, layer=layer_name)
    if out_dir is not None and cfg.examples > 0 and rows:
        result.out_dir = str(Path(out_dir))
        result.overlays, result.examples = _overlays(model, layer, pairs, rows, cfg, config,
                                                            Path(out_dir), device)
    result.seconds = time.time() - t0
    result.provenance = Provenance.of("probe_saliency", config, model=model, layout=layout, seed=cfg.seed)
    return result


def _measures(cam: np.ndarray, mask: np.ndarray) -> List[float]:
    """RIVAL10's measures of one map, in METRICS order."""
    s = saliency_alignment(cam, mask)
    return [s[n] for n in METRICS]


def _sql(v: float) -> Optional[float]:
    """NaN is stored as NULL."""
    return None if v != v else float(v)


def _overlays(model, layer, pairs, rows, cfg: SaliencyConfig, config: dict, out_dir: Path, device: str):
    """Recompute the maps of the chosen examples (a batch or so) and draw them: the grid PNG's
    path, and one overlay PNG per example (`write_example_overlays`)."""
    from ...probing.batches import masked_batches
    from .overlays import choose_examples, write_example_overlays, write_overlays
    chosen = {ex.image_id: ex for ex in choose_examples(rows, cfg.examples)}
    wanted = [p for p in pairs if p[0].image_id in chosen]
    panels = {}
    for items, x, m in masked_batches(wanted, cfg.batch_size, device, cfg.workers):
        maps, _ = gradcam_batch(model, layer, x)
        for k, it in enumerate(items):
            panels[it.image_id] = (chosen[it.image_id], it.label, x[k].permute(1, 2, 0).cpu().numpy(), maps[k],
                                   m[k, 0].cpu().numpy() > 0.5)
    ordered = [panels[i] for i in chosen if i in panels]
    name = class_namer(config["classes"], config["label_space"] == "dataset")
    grid = write_overlays([(ex, *rest) for ex, _, *rest in ordered], name, out_dir / OVERLAYS_FILE)
    return str(grid), write_example_overlays(ordered, out_dir / EXAMPLES_FOLDER)
