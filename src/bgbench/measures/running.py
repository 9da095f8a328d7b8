"""`RunningMeasure`: the one template every measure that runs a model follows (eval, the challenge,
the shortcut arms, the probes).

In the template-method style of pytorch-grad-cam's `BaseCAM` (which owns the hooks and the
batching while `GradCAM` overrides one method), `compute` owns the steps such a run shares, in
this order, and a measure supplies what is its own:

1. the data and its image sets: `image_sets(model, data, cfg, **given)` -> (layout, sets): the --data
   layout and what the measure runs over (a probe's foregrounds and masks, eval's variants, the
   shortcut arms, the challenge's foregrounds and backgrounds);
2. the checks: `meet(model, layout, sets, cfg)`: the label spaces and the input size
   (`models.spec.meet_data`) and a --protocol's (`protocols.check_spec`), before any forward;
3. the device: torchrun's ranks (`distributed.setup`) and the model on this rank's device, in
   eval mode (a `RunContext` holds them for the hooks);
4. the run: `measure(run, cfg, out_dir)` -> (result, config), on rank 0; None on the others. It
   feeds its images through the feed below, so that how images reach the model is written once;
5. the record: the run's provenance, built from the config it returns (`RunContext.provenance`,
   the one place a model run's provenance is built).

Images reach the model through the one feed (`evaluation.feed`): `predicted` below is its
batched prediction of a set of items, shared between torchrun ranks in whole batches and joined on
rank 0 (eval and the arms); the probes read its batches of images and masks (`base.ModelMeasure`).
The challenge keeps its own engine, search and resumable store; this template only drives its
setup and provenance.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, Optional, Sequence, Tuple

from .registry import Measure


@dataclass
class RunContext:
    """What `compute` holds for a measure's hooks: the model on its device, the data, the image sets,
    this rank, and how the run was asked for."""

    measure: Measure  # the measure that runs
    model: Any  # on this rank's device, in eval mode
    layout: Any  # the --data layout
    ranks: Any  # distributed.Ranks
    sets: Any = None  # what `image_sets` returned beside the layout
    progress: bool = True
    started: float = field(default_factory=time.time)
    given: Dict[str, Any] = field(default_factory=dict)  # what the caller passed beside the config

    @property
    def device(self) -> str:
        return self.ranks.device

    @property
    def pairs(self) -> list:
        """A probe's (item, mask) pairs."""
        return self.sets.pairs

    @property
    def attributes(self) -> Any:
        """A probe's attribute source (None where it reads no attribute masks)."""
        return self.sets.attributes

    def elapsed(self) -> float:
        return time.time() - self.started

    def provenance(self, config: Dict[str, Any], cfg):
        """The provenance of this run under `config`: the one call of `Measure.provenance` for a model
        run (the template's, after the run; the challenge's, when it opens its run)."""
        return self.measure.provenance(config, model=self.model, layout=self.layout,
                                       seed=getattr(cfg, "seed", None))


class RunningMeasure(Measure):
    """A measure that runs a model over a dataset's images (see the module docstring)."""

    #: Whether the model's outputs must be the dataset's classes (or map to them); False for
    #: measures that read features, not decisions.
    decides: ClassVar[bool] = True

    def compute(self, model, data, cfg, *, progress: bool = True, out_dir=None, **given):
        """Run the measure of `model` on `data` under `cfg` (see the module docstring): its result on
        rank 0, None on the other torchrun ranks. `given`: what a measure takes beside its config
        (eval's renderers, the challenge's store)."""
        from ..distributed import setup
        started = time.time()
        layout, sets = self.image_sets(model, data, cfg, **given)
        self.meet(model, layout, sets, cfg)
        ranks = setup(cfg.device)
        run = RunContext(self, model.to(ranks.device).eval(), layout, ranks, sets, progress, started, given)
        if ranks.main:
            _note_precision(run, str(getattr(cfg, "precision", "fp32")))
        done = self.measure(run, cfg, out_dir)
        if done is None:
            return None
        result, config = done
        if config is not None:
            result.provenance = run.provenance(config, cfg)
        return result

    # -- what a measure supplies --------------------------------------------------------------------
    def image_sets(self, model, data, cfg, **given) -> Tuple[Any, Any]:
        """(the --data layout, the image sets the run reads); the `original` images by default. The
        model is there for a measure that refuses it for its sets (texture: not an ImageNet model)."""
        from ..data.resolve import resolve_layout
        return resolve_layout(data, ["original"]), None

    def meet(self, model, layout, sets, cfg) -> None:
        """The model meets the data before anything runs: label spaces, input size, --protocol."""
        from .. import protocols
        from ..models.spec import meet_data
        meet_data(model, layout, labels=self.decides)
        protocols.check_spec(getattr(cfg, "protocol", None), model.spec.to_dict())

    def measure(self, run: RunContext, cfg, out_dir=None) -> Optional[Tuple[Any, Optional[Dict[str, Any]]]]:
        """The run itself: (its result, the config its provenance records; None where the measure
        built its provenance when it opened its run) on rank 0, None on the other ranks."""
        raise NotImplementedError

    def recorded(self, state: Any, cfg, run: RunContext) -> Dict[str, Any]:
        """Config keys of its own that the run records (how it computed: a layer, a rule, the carton
        class); `state` is what the measure prepared for its batches (or its image sets)."""
        return {}


def _note_precision(run: RunContext, precision: str) -> None:
    """A bf16 run says so before it starts where bf16 is slower than fp32 (not native), measured on
    four seeded random inputs at the model's input size."""
    if "bf16" not in precision:
        return
    import torch
    from ..evaluation.numerics import note_if_slower
    _, h, w = run.model.spec.input_size
    x = torch.rand(4, 3, h, w, generator=torch.Generator().manual_seed(0)).to(run.device)
    note_if_slower(precision, run.model, x, run.device)


# -- the feed -------------------------------------------------------------------------------------
def predicted(run: RunContext, cfg, items: Sequence, *, desc: str, render: Optional[Callable] = None,
              forward: Optional[Callable] = None, checker=None, pixels=None):
    """(every rank's predictions of `items`, joined in item order on rank 0 (None elsewhere), the
    pixels read): each rank predicts its share of whole `cfg.batch_size` batches through the feed,
    every process mapping the whole set's entry of the pixel cache (one decode on the machine;
    `pixels`: that entry where the caller has it, `data.decode_ahead`), or rendering each image
    with `render` (item -> HxWx3 uint8)."""
    from ..data.pixel_cache import Pixels, pixels_of
    from ..evaluation.predict import joined_predictions, predict_items
    if pixels is None:
        pixels = Pixels(items) if render is not None else pixels_of(items)
    mine = predict_items(run.model, items, pixels=pixels, ranks=run.ranks, batch_size=cfg.batch_size,
                         device=run.device, mapping=cfg.mapping, progress=run.progress and run.ranks.main,
                         desc=desc, render=render, forward=forward, workers=cfg.workers,
                         precision=getattr(cfg, "precision", "fp32"), checker=checker)
    return joined_predictions(mine, len(items), run.ranks, cfg.batch_size), pixels
