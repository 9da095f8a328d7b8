"""The noise measure (RIVAL10): its config and its class, which supplies each batch's rows (the
predictions under every region's noise, from `engine`) and the pure summary of the rows
(`summary`: the curves, RFS and their intervals, recomputed from a stored run with no inference,
under the grid and bootstrap seed recorded in its config); `base.ModelMeasure` does the rest.

With region 'attributes' (a dataset with attribute masks: RIVAL10, Synthetic-9), noise also goes
on each attribute's mask alone, on the images that have it, at the same levels and trials (rows of
region 'attr:<name>').
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, NamedTuple, Optional, Sequence, Union

from ...checks import at_least, member, one_of
from ...classes import Mapping, mapping_field
from ...options import flag, resolve_workers
from ...evaluation.metrics import REPLICATES
from ...data.facts import HARD_IMAGENET
from ..base import Attributes, BootstrapConfig, ModelMeasure
from ..registry import BenchmarkHeadlines, InProfile, Headline, SectionSpec
from .draws import DRAWS
from .levels import KINDS, data_grid, grid_label, level_label, resolve_levels
from .summary import NoiseRow, NoiseSummary, summarize

#: --region: 'object' probes the foreground and the background; 'attributes' adds each attribute.
REGION_CHOICES = ("object", "attributes")



@dataclass(kw_only=True)
class NoiseConfig(BootstrapConfig):
    """How to probe. kind 'sigma': Gaussian noise of per-pixel std σ; 'l2': Gaussian noise scaled
    to an L2 norm over the region. levels: a grid name (`levels.GRIDS`) or explicit numbers,
    resolved to numbers with the grid's name in `grid`; None (the default) leaves the grid to the
    data (`levels.data_grid`), which a run records in its config (`NoiseMeasure.recorded`)."""

    levels: Optional[Union[str, Sequence[Union[float, str]]]] = field(default=None, metadata=flag(
        "--levels", "a grid, rival10 (σ 30/255..210/255 in steps of 30/255; L2 25..200 in steps of 25) or "
        "hardimagenet (σ 0.125..0.75; L2 30..180), or explicit levels such as 0.25 0.5 or 30/255 (default: "
        "rival10; hardimagenet on Hard ImageNet's data); an overall RFS compares only within one grid", nargs="+",
        metavar="GRID|V", type=str))
    kind: str = field(default="sigma", metadata=flag(
        "--noise", "sigma: Gaussian noise of per-pixel std σ on the region; l2: Gaussian noise scaled to an L2 norm "
        "over the region (all channels, pixel values in [0,1]) (default %(default)s)", choices=KINDS))
    trials: int = field(default=3, metadata=flag("--trials", "seeded noise draws per image and level "
                                                             "(default %(default)s)"))
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the noise and of the bootstrap over images behind the intervals (default %(default)s)"))
    mapping: Mapping = mapping_field()
    grid: str = ""
    region: str = field(default="object", metadata=flag(
        "--region", "object: noise on the foreground, then on the background; attributes: also on each attribute's "
        "mask alone, on the images that have it (needs attribute masks: Synthetic-9 or RIVAL10) (default "
        "%(default)s)", choices=REGION_CHOICES))

    def __post_init__(self):
        super().__post_init__()
        one_of("--noise", self.kind, KINDS)
        one_of("--region", self.region, REGION_CHOICES)
        at_least("--trials", self.trials, 1)
        self.mapping = member("--mapping", self.mapping, Mapping)
        if self.levels is not None:  # unset levels wait for the data (`levels.data_grid`)
            self.grid, self.levels = resolve_levels(self.levels, self.kind)


class NoiseRun(NamedTuple):
    """What every batch of a run needs: the prediction function, the grid the run measures (the
    config's, or the data's where the config left it unset) and the protocol that scores it."""

    predict: Callable
    grid: str
    levels: List[float]
    protocol: str


class NoiseMeasure(ModelMeasure):
    """Noise sensitivity (RIVAL10): accuracy under foreground-only and background-only Gaussian noise,
    and the relative foreground sensitivity (RFS); with region 'attributes', noise on each attribute."""

    name = "noise"
    position = 90
    source = ("RIVAL10 (Moayeri et al., CVPR 2022), `compute_noise_robustness.py`: accuracy under "
              "foreground-only and background-only noise, RFS = (acc_bg − acc_fg) / (2·min(a, 1 − "
              "a)). On Hard ImageNet's data its `rfs.py` (mmoayeri/HardImageNet) computes the same "
              "per-level accuracies (per class, pooled over trials, mean over classes) and RFS "
              "(`compute_rfs`), on its own grid, which is the default there (σ 0.125 … 0.75, L2 30 … "
              "180); its figure is the RFS per level (the `rfs` rows with a level), not the overall RFS "
              "over the grid, which is RIVAL10's. As there, under L2 noise an image whose region is "
              "empty (a mask the centre crop empties) is wrong at every level: `l2_normalize` divides "
              "its zero noise by a zero norm, the image is NaN and torch's argmax over NaN logits is "
              "ImageNet class 0, none of the 15; bgbench stores such a copy with no prediction. On "
              "other data such an image's L2 noise is zero and its clean image is scored")
    checked_against = ("tests/measures/test_noise.py (accuracies and RFS worked by hand, an "
                       "independent bootstrap, RIVAL10's grids); tests/measures/test_hardimagenet_probes.py "
                       "(Hard ImageNet's `noisy_fg_bg_accs` and `compute_rfs` written out from its `rfs.py` in "
                       "tests/helpers/hardimagenet_oracle.py, fed bgbench's noise draws: the same accuracies and "
                       "RFS at every level of its σ and L2 grids, the emptied image wrong under L2 noise; "
                       "`bgbench probe noise` takes that grid on its data unless --levels names one)")
    title = "noise sensitivity (RFS)"
    needs = ("model", "masks")
    help = "Gaussian noise on the foreground vs the background: accuracy curves and RFS"
    description = ("accuracy under foreground-only and background-only noise, and RFS; with `--region attributes`, "
                   "under noise on each attribute's mask alone")
    config = NoiseConfig
    attributes = Attributes.CONFIG
    row = NoiseRow
    key = ("image_id", "region", "level", "trial")
    order = ("image_id",)
    headlines = (Headline("rfs", label="RFS (> 0: foreground noise hurts more)", short="RFS"),)
    sections = (SectionSpec("noise", "Noise sensitivity (RIVAL10)", f"{__package__}.section:noise_section"),
                SectionSpec("noise_gallery", "Images that noise flips first", f"{__package__}.section:noise_gallery",
                            after="noise"))
    benchmark_headlines = (BenchmarkHeadlines(HARD_IMAGENET, 30),)  # beside its RFS: the RFS of each level
    profile = InProfile(30, {"levels": ["60/255", "120/255"], "trials": 1})

    def headlines_on(self, benchmark, config):
        """On Hard ImageNet's data, beside the overall RFS, the RFS of each level of its newest run's grid,
        as Hard ImageNet's `rfs.py` reports one per noise level (none without a run)."""
        if config is None:
            return ()
        kind, grid = config.get("kind", "sigma"), config.get("grid") or "custom"
        symbol = "σ" if kind == "sigma" else "L2"
        return tuple(Headline("rfs", f"{float(level):g}",
                              label=f"Hard ImageNet: RFS at noise {symbol} {level_label(float(level), kind, grid)} "
                                    f"(rfs.py; > 0: foreground noise hurts more)",
                              short=f"RFS {symbol} {level_label(float(level), kind, grid)}")
                     for level in config.get("levels") or [])

    def forwards(self, images, variants, options, attributes=0, classes=()):
        """Each image noised on the object and on the background at each level, `trials` times (and,
        with region 'attributes', on each attribute it has: a ceiling, every image counted with every
        attribute)."""
        asked = options.get("levels")
        _, levels = resolve_levels(data_grid(None) if asked is None else asked, options.get("kind", "sigma"))
        trials = int(options.get("trials", NoiseConfig.trials))
        extra = attributes if options.get("region", NoiseConfig.region) == "attributes" else 0
        return images * (2 + extra) * len(levels) * trials, extra > 0

    def wants_attributes(self, run) -> Attributes:
        return Attributes.REQUIRED if run.cfg.region == "attributes" else Attributes.NEVER

    def on_data(self, options: dict, data_kind: str) -> dict:
        """Unset levels take the data's grid: what a study's plan counts and matches runs by."""
        return options if options.get("levels") is not None else {**options, "levels": data_grid(data_kind)}

    def prepare(self, run) -> NoiseRun:
        from ...evaluation.predict import decide
        from ..common.protocols import probe_protocol
        cfg: NoiseConfig = run.cfg
        grid, levels = (cfg.grid, cfg.levels) if cfg.levels is not None else \
            resolve_levels(data_grid(run.layout.kind), cfg.kind)
        return NoiseRun(lambda x: decide(run.model, run.model(x), cfg.mapping)[0], grid, levels,
                        probe_protocol(run.layout))

    def launch(self, run, batch):
        """Every image's prediction under each region's noise, level and trial (`engine`), queued on
        the device: each region's name and images, and its predictions on the way to the host."""
        from ...evaluation.feed import Readback
        from ..common.protocols import HARDIMAGENET
        from ..common.regions import object_regions
        from .engine import region_predictions
        state: NoiseRun = run.state
        cfg: NoiseConfig = run.cfg
        regions = object_regions(batch.m, batch.parts)
        preds = region_predictions(state.predict, batch.x, regions, [it.image_id for it in batch.items], cfg.seed,
                                   state.levels, cfg.trials, cfg.kind, chunk=cfg.batch_size,
                                   workers=resolve_workers(cfg.workers, str(batch.x.device)),
                                   empty_is_wrong=state.protocol == HARDIMAGENET)
        return ([(region.name, region.positions()) for region in regions],
                Readback(**{f"preds{k}": preds[region.name] for k, region in enumerate(regions)}))

    def landed(self, run, batch, launched) -> List[NoiseRow]:
        state: NoiseRun = run.state
        regions, back = launched
        got = back.get()
        items = batch.items
        rows: List[NoiseRow] = []
        for k, (name, positions) in enumerate(regions):
            done = got[f"preds{k}"]
            members = [items[i] for i in positions]
            rows.extend(NoiseRow(it.image_id, it.label, name, level, t, int(p == it.label), p if p >= 0 else None)
                        for li, level in enumerate(state.levels) for t in range(run.cfg.trials)
                        for i, it in enumerate(members) for p in (int(done[li, t, i]),))
        return rows

    def recorded(self, run) -> dict:
        return {"grid": run.state.grid, "levels": run.state.levels, "draws": DRAWS}

    def outputs(self, run, result) -> dict:
        c = result.config
        return {"grid": grid_label(c["grid"], c["kind"], c["levels"])}

    def summarize(self, rows: Sequence[NoiseRow], config: dict) -> NoiseSummary:
        """The summary of a probe's rows under its run config (grid, bootstrap seed and replicates)."""
        levels = sorted({float(r.level) for r in rows})
        kind = config.get("kind", "sigma")
        grid = {"name": config.get("grid") or "custom", "kind": kind, "levels": [float(v) for v in
                                                                                  config.get("levels") or levels]}
        return summarize(rows, grid=grid, seed=int(config.get("seed", 0)),
                         replicates=int(config.get("bootstrap_replicates", REPLICATES)))
