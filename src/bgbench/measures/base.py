"""`ModelMeasure`: the base of every measure that runs a model over a dataset's images and masks.

In the template-method style of pytorch-grad-cam's `BaseCAM` (which owns the hooks and the
batching while `GradCAM` overrides one method), `compute` owns everything a probe shares: layout
discovery, the label and input-size check (`models.spec.meet_data`), the images' sharding under
torchrun (`probing.sharding.ProbeShard`: ranks take whole batches, rank 0 gathers the rows in
one-process order), the prefetched batches, the progress bar, the autograd mode, provenance and
the result. A subclass supplies what is its own:

- `config` (class attribute): its options dataclass;
- `rows(state, batch, cfg)`: the rows of one batch (the math, usually a call into its engine);
- `summarize(rows, config)`: the pure summary of the rows;
- optionally `prepare` (what every batch needs: a layer, a head), `finish` (rows computed from
  every image's rows, such as a ranking), `recorded` (config keys of its own), `draw` (pictures).

A batch is `Batch(items, x, m, parts)`: the dataset items, images (N,3,H,W) in [0,1], object masks
(N,1,H,W) in {0,1}, and each attribute's (index, masks) where the measure reads attributes.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Dict, List, NamedTuple, Optional, Sequence

from .. import checks
from ..data.prefetch import workers_field
from ..evaluation.precision_flag import Precision, check_precision, precision_field
from ..errors import BgbenchError
from ..intervals import REPLICATES
from ..options import BATCH_SIZE, flag, runtime
from .registry import Command, Measure, declared
from .result import MeasureResult


@dataclass(kw_only=True)
class ProbeConfig:
    """How any probe runs: images per forward pass, the device, the threads that assemble the next
    batches (none of these changes its numbers), and the forward's arithmetic (which may). A probe's
    config subclasses it."""

    batch_size: int = field(default=BATCH_SIZE, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    precision: Precision = precision_field()

    def __post_init__(self):
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)
        self.precision = check_precision(self.precision, self.device)


@dataclass(kw_only=True)
class BootstrapConfig(ProbeConfig):
    """A probe whose intervals come from a seeded bootstrap over images."""

    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the bootstrap over images behind the intervals (default %(default)s)"))
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        super().__post_init__()
        checks.at_least("bootstrap replicates", self.bootstrap_replicates, 1)


def class_namer(config: dict):
    """index -> the run's class name (`config['classes']`), 'class i' beyond them: how a summary
    names the classes of a stored run."""
    classes = list(config.get("classes") or [])
    return lambda i: classes[i] if 0 <= i < len(classes) else f"class {i}"


class Batch(NamedTuple):
    items: list
    x: Any
    m: Any
    parts: Dict[str, tuple]


@dataclass
class RunContext:
    """What `compute` holds for the hooks: the model on its device, the data, the images, the run."""

    model: Any
    layout: Any
    pairs: list
    device: Any
    attributes: Any = None  # the layout's attribute source, where the measure reads attributes


class Attributes(StrEnum):
    """What a model measure does with the dataset's attribute masks."""

    NEVER = "never"  # reads none
    OPTIONAL = "optional"  # reads them when the data has them
    REQUIRED = "required"  # refuses data without them
    CONFIG = "config"  # as its options ask (`ModelMeasure.wants_attributes`)


class Autograd(StrEnum):
    """The autograd mode a model measure's forwards run under."""

    INFERENCE = "inference"  # `torch.inference_mode`
    NO_GRAD = "no_grad"  # `torch.no_grad` (tensors it keeps are used outside inference mode)
    GRAD = "grad"  # gradients (Grad-CAM)


class ModelMeasure(Measure):
    """A measure that runs a model over the originals and masks of a dataset (see the module docstring)."""

    command: ClassVar[Command] = Command.PROBE
    attributes: ClassVar[Attributes] = Attributes.NEVER
    #: Whether the model's outputs must be the dataset's classes (or map to them); False for
    #: measures that read features, not decisions.
    decides: ClassVar[bool] = True
    autograd: ClassVar[Autograd] = Autograd.INFERENCE

    def __init__(self):
        super().__init__()
        self.attributes = declared(Attributes, type(self).attributes, "attributes", self.name)
        self.autograd = declared(Autograd, type(self).autograd, "autograd", self.name)

    # -- the template ---------------------------------------------------------------------------
    def compute(self, model, data, cfg, *, progress: bool = True, out_dir=None, limit: Optional[int] = None
                ) -> Optional[MeasureResult]:
        """Run the measure of `model` on the originals and masks of `data`; with `out_dir` (and a
        measure that draws), its pictures are written there.

        Under torchrun the ranks share the images, whole batches each; rank 0 gathers every row in
        the order one process makes them and returns the one-process result, the others None.
        """

        from .. import console
        from ..data.resolve import resolve_layout
        from ..distributed import setup
        from ..models.spec import meet_data
        from ..probing.sharding import ProbeShard

        t0 = time.time()
        layout = resolve_layout(data, ["original"])
        source = self._attribute_source(layout, cfg)
        pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
        meet_data(model, layout, labels=self.decides)
        shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
        run = RunContext(model.to(shard.ranks.device).eval(), layout, pairs, shard.ranks.device, source)
        state = self.prepare(run, cfg)
        bar = console.progress(enabled=progress and shard.ranks.main, total=len(shard.pairs),
                               desc=f"{self.name} probe", unit="img")
        from ..evaluation.numerics import forward_context
        with self._autograd(), forward_context(getattr(cfg, "precision", "fp32"), shard.ranks.device):
            for batch in self._batches(shard.pairs, cfg, run):
                shard.add(batch.items, self.rows(state, batch, cfg))
                bar.update(len(batch.items))
        bar.close()
        rows = shard.gathered()
        if rows is None:
            return None
        rows, own = self.finish(state, rows, cfg, run)
        config = self.run_config(cfg, layout, shard.ranks, own={**own, **self.recorded(state, cfg, run)},
                                 images=len(pairs))
        if source is not None:
            config["attributes"] = list(source.names)
        result = MeasureResult(self.name, rows, config)
        if out_dir is not None and self.pictures and getattr(cfg, self.pictures) > 0 and rows:
            self.draw(result, state, cfg, run, Path(out_dir))
        result.extra = {**self.outputs(result, state), **result.extra}
        result.seconds = time.time() - t0
        result.provenance = self.provenance(config, model=run.model, layout=layout, seed=getattr(cfg, "seed", None))
        return result

    def _attribute_source(self, layout, cfg):
        """The layout's attribute masks where the measure reads them (a one-line error where it
        must and the data has none)."""
        wanted = self.attributes
        if wanted is Attributes.CONFIG:
            wanted = Attributes(self.wants_attributes(cfg))
        if wanted is Attributes.NEVER:
            return None
        source = layout.attribute_source
        if source is None and wanted is Attributes.REQUIRED:
            raise BgbenchError(f"{layout.root} has no attribute masks (attr_mask/{layout.split}/ or a RIVAL10 "
                               f"release); `bgbench synth` writes them")
        return source

    def _batches(self, pairs: Sequence[tuple], cfg, run: RunContext):
        from ..probing.batches import attribute_batches, masked_batches
        if run.attributes is not None:
            for items, x, m, parts in attribute_batches(pairs, cfg.batch_size, run.device, run.attributes,
                                                        cfg.workers):
                yield Batch(items, x, m, parts)
        else:
            for items, x, m in masked_batches(pairs, cfg.batch_size, run.device, cfg.workers):
                yield Batch(items, x, m, {})

    def _autograd(self):
        import torch
        if self.autograd is Autograd.INFERENCE:
            return torch.inference_mode()
        return torch.no_grad() if self.autograd is Autograd.NO_GRAD else contextlib.nullcontext()

    # -- what a subclass supplies ------------------------------------------------------------------
    def wants_attributes(self, cfg) -> Attributes:
        """For `attributes = Attributes.CONFIG`: REQUIRED or NEVER, as the options ask."""
        return Attributes.NEVER

    def prepare(self, run: RunContext, cfg) -> Any:
        """What every batch needs (a layer, a head, a prediction function); the run itself by default."""
        return run

    def rows(self, state: Any, batch: Batch, cfg) -> List[tuple]:
        """The rows of one batch."""
        raise NotImplementedError

    def finish(self, state: Any, rows: List[tuple], cfg, run: RunContext):
        """(the rows to store, config keys they add) from every image's rows; the rows as they are
        by default."""
        return rows, {}

    def recorded(self, state: Any, cfg, run: RunContext) -> Dict[str, Any]:
        """Config keys of its own that the run records (how it computed: a layer, a rule)."""
        return {}

    def outputs(self, result: MeasureResult, state: Any) -> Dict[str, Any]:
        """Outputs beyond the rows, which `--json` prints before the summary."""
        return {}

    def draw(self, result: MeasureResult, state: Any, cfg, run: RunContext, out_dir: Path) -> None:
        """Write the run's pictures into `out_dir` (measures with `pictures`), noting them on `result`."""

    def text(self, result: MeasureResult) -> str:
        """What its command prints of a result: the summary's table."""
        return result.summary().text()
