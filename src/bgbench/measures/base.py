"""`ModelMeasure`: the base of the probes, which run a model over a dataset's images and masks.

It follows the template of every model-running measure (`running.RunningMeasure`: layout, the
label and input-size check, the device, provenance) and adds what a probe shares: the loop over the
feed's batches of images and masks (`evaluation.feed.batches` of `Images.of_pairs`: under torchrun
ranks take whole batches, and `feed.gathered` puts the rows in one-process order on rank 0), the
autograd mode and the result. A subclass supplies what is its own:

- `config` (class attribute): its options dataclass;
- `rows(run, batch)`: the rows of one batch (the math, usually a call into its engine; `run` is the
  one context every hook receives: `run.cfg`, `run.model`, `run.state` what `prepare(run)` made);
- `summarize(rows, config)`: the pure summary of the rows;
- optionally `prepare` (what every batch needs: a layer, a head), `finish` (rows computed from
  every image's rows, such as a ranking), `recorded` (config keys of its own), `draw` (pictures).

A batch is the feed's `Batch(items, x, m, parts)`: the dataset items, images (N,3,H,W) in [0,1],
object masks (N,1,H,W) in {0,1}, and each attribute's (index, masks) where the measure reads them.
"""
from __future__ import annotations

import contextlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Deque, Dict, Iterable, Iterator, List, NamedTuple, Tuple

from ..checks import at_least
from ..errors import BgbenchError
from ..evaluation.metrics import REPLICATES
from ..options import flag, resolve_workers
from .registry import Command, declared
from .result import MeasureResult
from .running import ProbeConfig, RunContext, RunningMeasure

if TYPE_CHECKING:
    from ..evaluation.feed import Batch


@dataclass(kw_only=True)
class BootstrapConfig(ProbeConfig):
    """A probe whose intervals come from a seeded bootstrap over images."""

    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the bootstrap over images behind the intervals (default %(default)s)"))
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        super().__post_init__()
        at_least("bootstrap replicates", self.bootstrap_replicates, 1)


class Foregrounds(NamedTuple):
    """A probe's image set: the (item, mask) pairs it measures, and the layout's attribute source
    where it reads attribute masks (None otherwise)."""

    pairs: list
    attributes: Any = None


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


class ModelMeasure(RunningMeasure):
    """A measure that runs a model over the originals and masks of a dataset (see the module docstring)."""

    command: ClassVar[Command] = Command.PROBE
    attributes: ClassVar[Attributes] = Attributes.NEVER
    autograd: ClassVar[Autograd] = Autograd.INFERENCE

    def __init__(self):
        super().__init__()
        self.attributes = declared(Attributes, type(self).attributes, "attributes", self.name)
        self.autograd = declared(Autograd, type(self).autograd, "autograd", self.name)

    # -- the template's steps (`RunningMeasure.compute(model, layout, cfg, *, progress, out_dir, limit)`:
    # the first `limit` pairs where given; under torchrun the ranks share the images, whole batches
    # each, and rank 0 gathers every row in the order one process makes them) ---------------------
    def image_sets(self, run: RunContext):
        """The layout's (item, mask) pairs, and its attribute source where the measure reads it."""
        return Foregrounds(attributes=self._attribute_source(run.layout, run),  # its error before the pairs'
                           pairs=run.layout.foregrounds()[:run.given.get("limit") or None])

    def measure(self, run: RunContext):
        from ..evaluation.feed import Images, batches, gathered
        from ..evaluation.numerics import forward_context
        cfg, pairs, attributes = run.cfg, run.sets.pairs, run.sets.attributes
        run.state = self.prepare(run)
        rows: Dict[int, List[tuple]] = {}
        images = Images.of_pairs(pairs, cfg.batch_size, attributes)
        fed = batches(images, device=run.device, workers=cfg.workers, ranks=run.ranks,
                      progress=run.progress and run.ranks.main, desc=f"{self.name} probe")
        with self._autograd(), forward_context(getattr(cfg, "precision", "fp32"), run.device):
            # each batch launched, then the rows of those now due; the rest once the feed ends
            launched = ((k, partial(self.landed, run, batch, self.launch(run, batch))) for k, batch in fed)
            for done, made in land_in_order(launched, self._landing_threads(cfg, run.device)):
                rows.setdefault(done, []).extend(made)
        rows = gathered(rows, len(images.chunks), run.ranks)
        if rows is None:
            return None
        rows, own = self.finish(run, rows)
        config = self.run_config(cfg, run.layout, run.ranks, own={**own, **self.recorded(run)}, images=len(pairs))
        if attributes is not None:
            config["attributes"] = list(attributes.names)
        result = MeasureResult(self.name, rows, config)
        if run.out_dir is not None and self.pictures and getattr(cfg, self.pictures) > 0 and rows:
            self.draw(run, result, Path(run.out_dir))
        result.extra = {**self.outputs(run, result), **result.extra}
        result.seconds = run.elapsed()
        return result, config

    def _attribute_source(self, layout, run: RunContext):
        """The layout's attribute masks where the measure reads them (a one-line error where it
        must and the data has none)."""
        wanted = self.attributes
        if wanted is Attributes.CONFIG:
            wanted = Attributes(self.wants_attributes(run))
        if wanted is Attributes.NEVER:
            return None
        source = layout.attribute_source
        if source is None and wanted is Attributes.REQUIRED:
            raise BgbenchError(f"{layout.root} has no attribute masks (attr_mask/{layout.split}/ or a RIVAL10 "
                               f"release); `bgbench synth` writes them")
        return source

    def _autograd(self):
        import torch
        return {Autograd.INFERENCE: torch.inference_mode, Autograd.NO_GRAD: torch.no_grad,
                Autograd.GRAD: contextlib.nullcontext}[self.autograd]()

    # -- what a subclass supplies (every hook receives the run: `run.cfg` its config dataclass,
    # `run.state` what `prepare` made) ------------------------------------------------------------
    def wants_attributes(self, run: RunContext) -> Attributes:
        """For `attributes = Attributes.CONFIG`: REQUIRED or NEVER, as the options (`run.cfg`) ask."""
        return Attributes.NEVER

    def prepare(self, run: RunContext) -> Any:
        """What every batch needs (a layer, a head, a prediction function), kept as `run.state`."""
        return None

    def rows(self, run: RunContext, batch: Batch) -> List[tuple]:
        """The rows of one batch (a measure supplies this, or `launch` and `landed`)."""
        raise NotImplementedError

    def launch(self, run: RunContext, batch: Batch) -> Any:
        """Queue one batch's device work and return what `landed` makes its rows of, reading
        nothing back to the host (an `evaluation.feed.Readback`): the template queues the next
        batch before it asks for this one's rows, so that on a GPU the card computes while the host
        builds rows. By default the batch's rows, made at once (`rows`)."""
        return self.rows(run, batch)

    def landed(self, run: RunContext, batch: Batch, launched: Any) -> List[tuple]:
        """The rows of a batch from what its `launch` returned (by default, those rows)."""
        return launched

    def _landing_threads(self, cfg, device) -> int:
        """Threads that make rows while the next batches launch (`land_in_order`, below): on a device whose
        results are queued to the host (a GPU), as many as --workers; else none, and rows are made in
        the caller, one batch behind."""
        import torch

        from ..evaluation.feed import QUEUED
        if torch.device(device).type not in QUEUED or type(self).landed is ModelMeasure.landed:
            return 0
        return resolve_workers(getattr(cfg, "workers", None), str(device))

    def finish(self, run: RunContext, rows: List[tuple]):
        """(the rows to store, config keys they add) from every image's rows; the rows as they are
        by default."""
        return rows, {}

    def outputs(self, run: RunContext, result: MeasureResult) -> Dict[str, Any]:
        """Outputs beyond the rows, which `--json` prints before the summary."""
        return {}

    def draw(self, run: RunContext, result: MeasureResult, out_dir: Path) -> None:
        """Write the run's pictures into `out_dir` (measures with `pictures`), noting them on `result`."""


# -- landing ---------------------------------------------------------------------------------------
# Turning a probe's launched batches into rows, in batch order, without holding up the next launch.
#
# `ModelMeasure.measure` queues a batch's device work (`launch`) and then makes rows of an earlier
# batch (`landed`). On the CPU there is nothing to overlap: the rows of a batch are made in the
# caller once the next one is launched, as one thread does everything anyway. On a GPU the host's
# share of a probe (Grad-CAM's post-processing and RIVAL10's eight measures in NumPy, a feature
# ranking's arrays) can exceed the card's time for a batch; `workers` threads then make rows while
# the caller launches the next batches. NumPy's sorts, reductions and OpenCV's resize release the
# interpreter's lock, so the threads work in parallel; rows still come out in batch order, and at
# most `workers` batches wait to be landed (each holds its images and results on the device).
def land_in_order(launched: Iterable[Tuple[Any, Callable[[], list]]], workers: int = 0) -> Iterator[Tuple[Any, list]]:
    """(batch, rows) of each (batch, the function that makes its rows) of `launched`, in order. With
    `workers` threads the functions run in them, at most `workers` batches waiting; with 0 in the
    caller, one batch behind. After an error, batches not landed are dropped."""
    pool = ThreadPoolExecutor(workers, thread_name_prefix="bgbench-land") if workers else None
    pending: Deque[Tuple[Any, Any]] = deque()

    def due(keep: int) -> Iterator[Tuple[Any, list]]:
        while len(pending) > keep:
            batch, work = pending.popleft()
            yield batch, (work() if pool is None else work.result())
    try:
        for batch, land in launched:
            pending.append((batch, land if pool is None else pool.submit(land)))
            yield from due(keep=workers or 1)  # without threads, the batch before this one
        yield from due(keep=0)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
