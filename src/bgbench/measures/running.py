"""`RunningMeasure`: the one template every measure that runs a model follows (eval, the challenge,
the shortcut arms, the probes).

In the template-method style of pytorch-grad-cam's `BaseCAM` (which owns the hooks and the
batching while `GradCAM` overrides one method), `compute` owns the steps such a run shares, in
this order, and a measure supplies what is its own. Every hook receives one context, the
`RunContext` below (the model, the data, the config dataclass, the ranks, the device, and what the
measure prepared), so a measure reads one signature:

0. the data: the caller reads --data into a `data.layout.Layout` as the measure declares
   (`reads(cfg, data, given)`: the variants, the split; `runs.run_measure` is that caller), so a
   measure never imports the dataset readers;
1. its image sets: `image_sets(run)` -> what the measure runs over (a probe's foregrounds and
   masks, eval's variants, the shortcut arms, none for the challenge);
2. the checks: `meet(run)`: the label spaces, the input size and a --protocol's settings
   (`model.meet`), before any forward;
3. the device: torchrun's ranks (`distributed.setup`) and the model on this rank's device, in
   eval mode;
4. the run: `measure(run)` -> (result, config), on rank 0; None on the others. It feeds its images
   through the one feed (`evaluation.feed`), so that how images reach the model is written once;
5. the record: the run's provenance, built from the config it returns (`RunContext.provenance`,
   the one place a model run's provenance is built), unless the measure opened its run's
   provenance itself (the challenge, whose store rows come before its end: `opened = True`).

`predicted` below is the feed's batched prediction of a run's `Arm`s (eval's variants, the
shortcut measures' arms), shared between torchrun ranks in whole batches and gathered on rank 0 as
the probes' rows are; the probes read the feed's batches of images and masks (`base.ModelMeasure`). The challenge keeps its own engine, search and
resumable store; this template only drives its setup and provenance.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, Iterable, Optional, Tuple

from ..checks import at_least, device as valid_device
from ..evaluation.precision_flag import Precision, check_precision, precision_field
from ..options import BATCH_SIZE, runtime, workers_field
from .registry import Measure


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
        at_least("--batch-size", self.batch_size, 1)
        at_least("--workers", self.workers, 1)
        valid_device(self.device)
        self.precision = check_precision(self.precision, self.device)


@dataclass
class RunContext:
    """What every hook of a run receives: the measure, the model (on this rank's device, in eval
    mode, once the ranks are set up), its config dataclass, the --data layout, the image sets, this
    rank, what the measure prepared (`state`), and how the run was asked for."""

    measure: Measure
    model: Any
    cfg: Any  # the measure's config dataclass
    layout: Any = None  # the --data layout (`data.layout.Layout`), read as `reads` declares
    sets: Any = None  # what `image_sets` returned
    ranks: Any = None  # distributed.Ranks
    state: Any = None  # what the measure prepared for its batches (a probe's `prepare`)
    progress: bool = True
    out_dir: Any = None  # where its pictures go (None: none drawn)
    started: float = field(default_factory=time.time)
    given: Dict[str, Any] = field(default_factory=dict)  # what the caller passed beside the config

    @property
    def device(self) -> str:
        return self.ranks.device

    def elapsed(self) -> float:
        return time.time() - self.started

    def provenance(self, config: Dict[str, Any]):
        """The provenance of this run under `config`: the one call of `Measure.provenance` for a model
        run (the template's, after the run; the challenge's, when it opens its run)."""
        return self.measure.provenance(config, model=self.model, layout=self.layout,
                                       seed=getattr(self.cfg, "seed", None))


class RunningMeasure(Measure):
    """A measure that runs a model over a dataset's images (see the module docstring)."""

    #: Whether the model's outputs must be the dataset's classes (or map to them); False for
    #: measures that read features, not decisions.
    decides: ClassVar[bool] = True
    #: Whether `measure` opens the run's provenance itself (the challenge); the template's otherwise.
    opened: ClassVar[bool] = False

    def compute(self, model, layout, cfg, *, progress: bool = True, out_dir=None, **given):
        """Run the measure of `model` on `layout` (--data read as `reads` asks) under `cfg` (see the
        module docstring): its result on rank 0, None on the other torchrun ranks. `given`: what a
        measure takes beside its config (eval's renderers, the challenge's store, a probe's `limit`)."""
        from ..distributed import setup
        run = RunContext(self, model, cfg, layout=layout, progress=progress, out_dir=out_dir, given=given)
        run.sets = self.image_sets(run)
        self.meet(run)
        run.ranks = setup(cfg.device)
        run.model = model.to(run.ranks.device).eval()
        if run.ranks.main:  # a bf16 run says so before it starts where bf16 is slower than fp32 (not native)
            from ..evaluation.numerics import note_if_slower
            note_if_slower(str(getattr(cfg, "precision", "fp32")), run.model, run.device)
        done = self.measure(run)
        if done is None:
            return None
        result, config = done
        if not self.opened:
            result.provenance = run.provenance(config)
        return result

    # -- what a measure supplies --------------------------------------------------------------------
    def reads(self, cfg, data, given: Dict[str, Any]) -> Dict[str, Any]:
        """How the caller reads --data (`data`, a path) for a run under `cfg`: the keyword arguments of
        `data.resolve.resolve_layout` (the variants, the split); `original` by default."""
        return {"variants": ["original"]}

    def image_sets(self, run: RunContext) -> Any:
        """What the run reads of `run.layout` (None by default: the layout itself). The model is
        there for a measure that refuses it for its sets (texture: not an ImageNet model)."""
        return None

    def meet(self, run: RunContext) -> None:
        """The model meets the data before anything runs: label spaces, input size, --protocol."""
        meet_layout(run, run.layout)

    def measure(self, run: RunContext) -> Optional[Tuple[Any, Dict[str, Any]]]:
        """The run itself: (its result, the config its provenance records) on rank 0, None on the
        other ranks."""
        raise NotImplementedError

    def text(self, result) -> str:
        """What its command prints of a result: the summary's table."""
        return result.summary().text()

    def recorded(self, run: RunContext) -> Dict[str, Any]:
        """Config keys of its own that the run records (how it computed: a layer, a rule, the carton
        class), from what it prepared (`run.state`) or its image sets."""
        return {}


def meet_layout(run: RunContext, layout) -> None:
    """`run`'s model meets `layout`: label spaces (where the measure decides), input size, --protocol."""
    run.model.meet(layout, labels=run.measure.decides, protocol=getattr(run.cfg, "protocol", None))


# -- the feed -------------------------------------------------------------------------------------
@dataclass
class Arm:
    """One set of images a run predicts (one of eval's variants, one of a shortcut measure's arms):
    the images of `variant` in `layout`; `render` (item -> HxWx3 uint8) makes each image on the fly
    instead of decoding it; `forward(model, x)` replaces the plain forward (ten-crop; only some
    classes compete); `checker(item, image)` sees every image (the masks' sizes of originals)."""

    name: str
    layout: Any
    render: Optional[Callable] = None
    forward: Optional[Callable] = None
    variant: str = "original"
    checker: Optional[Callable] = None

    def items(self) -> list:
        return self.layout.items(self.variant)


def predicted(run: RunContext, arms: Iterable[Arm], *, prefix: str = "", read: Optional[Callable] = None):
    """(each arm's predictions by name, every rank's joined in item order on rank 0, None elsewhere;
    {images: how many were read, from_cache: how many came decoded from the pixel cache}): each
    rank predicts its share of whole `run.cfg.batch_size` batches of each arm in turn, through the
    feed (`evaluation.predict.predict_items`), every process mapping the whole arm's entry of the
    pixel cache (one decode on the machine) or rendering each image with `arm.render`. `read(arm)`:
    the pixels of an arm read from files where the caller has them (eval's, decoded ahead:
    `eval.runner.DecodeAhead`); `prefix` goes before each arm's name on its progress bar."""
    from ..data.pixel_cache import Pixels, pixels_of
    from ..evaluation.predict import predict_items
    cfg = run.cfg
    joined, fed = {}, {"images": 0, "from_cache": 0}
    for arm in arms:
        items = arm.items()
        if arm.render is not None:
            pixels = Pixels(items)
        else:
            pixels = read(arm) if read is not None else pixels_of(items)
        joined[arm.name] = predict_items(
            run.model, items, pixels=pixels, ranks=run.ranks, batch_size=cfg.batch_size, device=run.device,
            mapping=cfg.mapping, progress=run.progress and run.ranks.main, desc=prefix + arm.name, render=arm.render,
            forward=arm.forward, workers=cfg.workers, precision=getattr(cfg, "precision", "fp32"), checker=arm.checker)
        fed["images"] += len(items)
        fed["from_cache"] += pixels.from_cache
    return joined, fed
