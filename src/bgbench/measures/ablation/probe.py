"""The ablation probe (RIVAL10 §4, `attr_importance.py`): config, runner (I/O), stored summary.

`probe_ablate` replaces, on each original image, the object, the background and (where the
dataset has attribute masks: RIVAL10, Synthetic-9) each attribute the image has with gray (0.5)
(`ablation_engine`), and returns a result whose per-image rows go to the `probe_ablate` table:
(image_id, label, region, pred, correct, true_prob), region 'none' for the clean image, 'fg',
'bg' or 'attr:<name>'. `ablation_summary` recomputes the drops and their intervals
(`ablation_summary.summarize_ablation`) from that table with no inference.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import ClassVar, List, Optional

from ... import checks
from ...options import flag, runtime
from ..result import MeasureResult, stored_summary
from .table import TABLE
from ...classes import Mapping
from ...store import Store
from .summary import AblationSummary, summarize_ablation
from ...probing.bootstrap import REPLICATES
from ...data.prefetch import workers_field

KIND = "probe_ablate"


@dataclass
class AblateConfig:
    """How to ablate."""

    batch_size: int = field(default=64, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the bootstrap over images behind the intervals (default %(default)s)"))
    mapping: str = Mapping.ARGMAX.value
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)
        checks.one_of("--mapping", self.mapping, [m.value for m in Mapping])
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)


@dataclass
class AblationResult(MeasureResult):
    """Per-image outcomes; rows: (image_id, label, region, pred, correct, true_prob)."""

    measure: ClassVar[str] = "ablate"

    def summarize(self) -> AblationSummary:
        return summary_of(self.rows, self.config)

    def extra_outputs(self) -> dict:
        return {"regions": sorted({r[2] for r in self.rows} - {"none"})}



def summary_of(rows, config: dict) -> AblationSummary:
    classes = list(config.get("classes") or [])

    def name(i: int) -> str:
        return classes[i] if 0 <= i < len(classes) else f"class {i}"
    return summarize_ablation(rows, name, seed=int(config.get("seed", 0)),
                              replicates=int(config.get("bootstrap_replicates", REPLICATES)))


def ablation_summary(store: Store, run_id: int) -> AblationSummary:
    """The summary of a stored probe_ablate run, recomputed from its per-image table."""
    return stored_summary(store, run_id, KIND, TABLE, summary_of)


def probe_ablate(model, data, cfg: AblateConfig, progress: bool = True, limit: Optional[int] = None
                 ) -> Optional[AblationResult]:
    """Ablate the object, the background and each attribute of the originals of `data`.

    Under torchrun the ranks share the images (`sharding.ProbeShard`) and rank 0 returns the
    result of one process (an image's outcomes depend on nothing else in its batch); the other
    ranks return None.
    """
    import torch

    from ... import console
    from ...data.resolve import resolve_layout
    from ...distributed import setup, world_record
    from ...evaluation.predict import class_probabilities, decide
    from ...models.spec import meet_data
    from ...recording import Provenance
    from .engine import GRAY, ablation_outcomes
    from ...probing.batches import attribute_batches, masked_batches
    from ..noise.engine import ATTRIBUTE_PREFIX, Region, object_regions
    from ...probing.sharding import ProbeShard

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    source = layout.attribute_source
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    meet_data(model, layout)
    shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
    device = shard.ranks.device
    model = model.to(device).eval()

    def score(x):
        logits = model(x)
        return decide(model, logits, cfg.mapping)[0], class_probabilities(model, logits)

    batches = (attribute_batches(shard.pairs, cfg.batch_size, device, source, cfg.workers) if source is not None else
               ((*b, {}) for b in masked_batches(shard.pairs, cfg.batch_size, device, cfg.workers)))
    bar = console.progress(enabled=progress and shard.ranks.main, total=len(shard.pairs), desc="ablation probe",
                           unit="img")
    with torch.inference_mode():
        for items, x, m, parts in batches:
            y = torch.as_tensor([it.label for it in items], device=device)
            regions = object_regions(m) + [Region(ATTRIBUTE_PREFIX + name, idx, where)
                                           for name, (idx, where) in parts.items()]
            outcomes = ablation_outcomes(score, x, regions, y, chunk=cfg.batch_size)
            every = torch.arange(len(items))
            rows: List[tuple] = []
            for name, index in [("none", every)] + [(r.name, r.index.cpu()) for r in regions]:
                preds, probs = (t.cpu().tolist() for t in outcomes[name])
                for k, pred, prob in zip(index.tolist(), preds, probs):
                    it = items[k]
                    rows.append((it.image_id, it.label, name, int(pred), int(pred == it.label), float(prob)))
            shard.add(items, rows)
            bar.update(len(items))
    bar.close()
    rows = shard.gathered()
    if rows is None:
        return None
    config = {**asdict(cfg), "gray": GRAY, "split": layout.split, "images": len(pairs),
              "attributes": list(source.names) if source is not None else [], **world_record(shard.ranks)}
    result = AblationResult(rows=rows, config={**config, "classes": list(layout.classes)}, seconds=time.time() - t0)
    result.provenance = Provenance.of(KIND, config, model=model, layout=layout, seed=cfg.seed)
    return result
