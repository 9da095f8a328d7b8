"""The noise probe (RIVAL10): its config, the runner (I/O) and the summary of a stored probe run.

`probe_noise` decodes images and masks, runs the engine (`noise_engine`) in batches and returns a
result whose per-image rows go to the `probe_noise` table; `noise_summary` recomputes the curves,
RFS and their intervals (`noise_curves`) from that table with no inference, under the grid and
bootstrap seed recorded in the run's config. With region 'attributes' (a dataset with attribute
masks: RIVAL10, Synthetic-9), noise also goes on each attribute's mask alone, on the images that
have it, at the same levels and trials (rows of region 'attr:<name>').
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import ClassVar, List, Optional, Sequence, Union

from ... import checks
from ...options import flag, runtime
from ...distributed import world_record
from ...errors import BgbenchError
from ...store import Store
from ...probing.bootstrap import REPLICATES
from ..result import MeasureResult, stored_summary
from .table import TABLE
from .summary import NoiseSummary, summarize
from .levels import KINDS, grid_label, resolve_levels
from ...data.prefetch import workers_field

#: --region: 'object' probes the foreground and the background; 'attributes' adds each attribute.
REGION_CHOICES = ("object", "attributes")

#: How the run's noise was drawn, recorded in its config: runs that say so can have any noisy copy
#: regenerated (`noise_engine.noisy_copy`); earlier runs drew from one generator per run.
DRAWS = "per image: seed, image id, region, level (CPU)"


@dataclass
class NoiseConfig:
    """How to probe. kind 'sigma': Gaussian noise of per-pixel std σ; 'l2': Gaussian noise scaled
    to an L2 norm over the region. levels: a grid name (`noise_levels.GRIDS`, default 'rival10')
    or explicit numbers; resolved in place, with the grid's name in `grid`."""

    levels: Optional[Union[str, Sequence[Union[float, str]]]] = field(default=None, metadata=flag(
        "--levels", "a grid, rival10 (σ 30/255..210/255 in steps of 30/255; L2 25..200 in steps of 25) or "
        "hardimagenet (σ 0.125..0.75; L2 30..180), or explicit levels such as 0.25 0.5 or 30/255 (default: "
        "rival10); an overall RFS compares only within one grid", nargs="+", metavar="GRID|V", type=str))
    kind: str = field(default="sigma", metadata=flag(
        "--noise", "sigma: Gaussian noise of per-pixel std σ on the region; l2: Gaussian noise scaled to an L2 norm "
        "over the region (all channels, pixel values in [0,1]) (default %(default)s)", choices=KINDS))
    trials: int = field(default=3, metadata=flag("--trials", "seeded noise draws per image and level "
                                                             "(default %(default)s)"))
    batch_size: int = field(default=64, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the noise and of the bootstrap over images behind the intervals (default %(default)s)"))
    mapping: str = "argmax"
    grid: str = ""
    bootstrap_replicates: int = REPLICATES
    region: str = field(default="object", metadata=flag(
        "--region", "object: noise on the foreground, then on the background; attributes: also on each attribute's "
        "mask alone, on the images that have it (needs attribute masks: Synthetic-9 or RIVAL10) (default "
        "%(default)s)", choices=REGION_CHOICES))

    def __post_init__(self):
        checks.one_of("--noise", self.kind, KINDS)
        checks.one_of("--region", self.region, REGION_CHOICES)
        checks.at_least("--trials", self.trials, 1)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)
        checks.one_of("--mapping", self.mapping, ("argmax", "superclass"))
        self.grid, self.levels = resolve_levels(self.levels, self.kind)
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)


@dataclass
class NoiseProbeResult(MeasureResult):
    """Per-image results; rows: (image_id, label, region, level, trial, correct, pred)."""

    measure: ClassVar[str] = "noise"

    def summarize(self) -> NoiseSummary:
        return summary_of(self.rows, self.config)

    def extra_outputs(self) -> dict:
        return {"grid": grid_label(self.config["grid"], self.config["kind"], self.config["levels"])}

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, **self.summary().to_dict()}  # the grid is in the summary

    def table(self) -> str:
        return self.summary().table()


def summary_of(rows: Sequence[tuple], config: dict) -> NoiseSummary:
    """The summary of a probe's rows under its run config (grid, bootstrap seed and replicates).

    Runs recorded before grids had names keep their levels, named 'custom'."""
    levels = sorted({float(r[3]) for r in rows})
    kind = config.get("kind", "sigma")
    grid = {"name": config.get("grid") or "custom", "kind": kind, "levels": [float(v) for v in
                                                                              config.get("levels") or levels]}
    return summarize(rows, grid=grid, seed=int(config.get("seed", 0)),
                     replicates=int(config.get("bootstrap_replicates", REPLICATES)))


def noise_summary(store: Store, run_id: int) -> NoiseSummary:
    """Curves and RFS of a stored probe_noise run, recomputed from its per-image table."""
    return stored_summary(store, run_id, "probe_noise", TABLE, summary_of)


def probe_noise(model, data, cfg: NoiseConfig, progress: bool = True, limit: Optional[int] = None
                ) -> Optional[NoiseProbeResult]:
    """Run the noise probe of `model` on the originals and masks of `data` (any dataset with masks).

    Under torchrun the ranks share the images (`sharding.ProbeShard`) and rank 0 returns the
    result of one process (each image's noise has its own seed); the other ranks return None.
    """
    import time

    import torch

    from ... import console
    from ...data.resolve import resolve_layout
    from ...distributed import setup
    from ...evaluation.predict import decide
    from ...models.spec import meet_data
    from ...recording import Provenance
    from ...probing.batches import attribute_batches, masked_batches
    from .engine import ATTRIBUTE_PREFIX, Region, object_regions, region_predictions
    from ...probing.sharding import ProbeShard

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    source = _attributes(layout, cfg.region)
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    meet_data(model, layout)
    shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
    device = shard.ranks.device
    model = model.to(device).eval()

    def predict(x):
        return decide(model, model(x), cfg.mapping)[0]

    batches = (attribute_batches(shard.pairs, cfg.batch_size, device, source, cfg.workers) if source is not None else
               ((*b, {}) for b in masked_batches(shard.pairs, cfg.batch_size, device, cfg.workers)))
    bar = console.progress(enabled=progress and shard.ranks.main, total=len(shard.pairs), desc="noise probe",
                           unit="img")
    with torch.inference_mode():
        for items, x, m, parts in batches:
            regions = object_regions(m) + [Region(ATTRIBUTE_PREFIX + name, idx, where)
                                           for name, (idx, where) in parts.items()]
            preds = region_predictions(predict, x, regions, [it.image_id for it in items], cfg.seed, cfg.levels,
                                       cfg.trials, cfg.kind, chunk=cfg.batch_size)
            rows: List[tuple] = []
            for region in regions:
                done = preds[region.name].cpu().numpy()
                members = [items[k] for k in region.index.tolist()]
                rows.extend((it.image_id, it.label, region.name, level, t, int(done[li, t, k] == it.label),
                             int(done[li, t, k]))
                            for li, level in enumerate(cfg.levels) for t in range(cfg.trials)
                            for k, it in enumerate(members))
            shard.add(items, rows)
            bar.update(len(items))
    bar.close()
    rows = shard.gathered()
    if rows is None:
        return None
    config = {**asdict(cfg), "draws": DRAWS}
    if source is not None:
        config["attributes"] = list(source.names)
    result = NoiseProbeResult(rows=rows, config=config, seconds=time.time() - t0)
    result.provenance = Provenance.of("probe_noise", {**config, "split": layout.split, "images": len(pairs),
                                                      **world_record(shard.ranks)},
                                      model=model, layout=layout, seed=cfg.seed)
    return result


def _attributes(layout, region: str):
    """The layout's attribute source for region 'attributes' (an error when it has none); else None."""
    if region != "attributes":
        return None
    source = layout.attribute_source
    if source is None:
        raise BgbenchError(f"--region attributes: {layout.root} has no attribute masks (attr_mask/{layout.split}/ "
                           f"or a RIVAL10 release); `bgbench synth` writes them")
    return source
