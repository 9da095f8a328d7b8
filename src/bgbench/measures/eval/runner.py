"""Evaluating a model on a dataset's variants: the per-image table and the report built from it.

The eval measure's steps in the template of every model run (`running.RunningMeasure`): its image
sets (`eval_sets`: the variants) and its run (`eval_run`: each variant through the template's
feed); I/O lives here; the metrics are pure functions of the predictions (`results.EvalReport`).
Variants whose folder a dataset lacks but that can be computed from `original`, `fg_mask` and the
boxes (bg_blurred on the public release) come from `renderers`, passed in by the caller because
computing them needs a higher layer.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

from ...protocols import settings_of
from ...console import status
from ...data.pixel_cache import Pixels, enabled, pixels_of
from ...data.layout import Item, Layout
from ...distributed import Ranks
from ...models.labels import model_label
from .config import EvalConfig
from ..common.groups import group_results
from ..running import Arm, RunContext, predicted
from ...evaluation.predict import Predictions, mask_checker
from .results import EvalReport
from .waterbirds import waterbirds_results

#: variant -> (layout -> (item of `original` -> HxWx3 uint8 image of the variant)).
Renderers = Dict[str, Callable[[Layout], Callable[[Item], object]]]


@dataclass
class Variants:
    """Eval's image sets: the variants it predicts, in order, those of them computed on the fly
    from `original` (and the renderers that compute them)."""

    names: List[str]
    on_the_fly: set
    renderers: Renderers


def variants_on_disk(data, cfg: EvalConfig, renderers: Renderers) -> Optional[List[str]]:
    """The variant folders a run reads of `data` (a path; None: every variant it has): the requested
    ones, with `original` in place of those the data lacks but a renderer computes from it."""
    root = Path(data).expanduser()
    on_the_fly = {v for v in cfg.variants or () if v in renderers and not (root / v).is_dir()}
    on_disk = [v for v in cfg.variants or () if v not in on_the_fly]
    if on_the_fly and "original" not in on_disk:
        on_disk.append("original")
    return on_disk or None


def eval_sets(layout: Layout, cfg: EvalConfig, renderers: Renderers) -> Variants:
    """Eval's `Variants` on `layout`: the requested variants (every variant of the layout by
    default), those it lacks computed by their renderer from `original`."""
    on_the_fly = {v for v in cfg.variants or () if v in renderers and v not in layout.variants}
    return Variants(list(cfg.variants or layout.variants), on_the_fly, renderers)


def eval_run(run: RunContext):
    """Every variant's predictions (the template's feed), and on rank 0 (the report, its config)."""
    cfg: EvalConfig = run.cfg
    model, layout, sets = run.model, run.layout, run.sets
    _warn_ten_crop_size(model, cfg, run.ranks)
    on_disk = [v for v in sets.names if v not in sets.on_the_fly]
    ahead = decode_ahead([layout.items(v) for v in on_disk], run.device)  # the next variant decodes meanwhile
    forward = ten_crop_logits if cfg.ten_crop else None
    # each variant as an arm, made when its turn comes (a renderer says what it computes then)
    arms = (Arm(v, layout, sets.renderers[v](layout), forward) if v in sets.on_the_fly else
            Arm(v, layout, forward=forward, variant=v, checker=mask_checker(layout) if v == "original" else None)
            for v in sets.names)
    try:
        predictions, fed = predicted(run, arms, read=None if ahead is None else
                                     lambda arm: ahead.pixels(on_disk.index(arm.name)))
    finally:
        if ahead is not None:
            ahead.close()
    if not run.ranks.main:
        return None
    if fed["from_cache"]:  # what the run did: the images it did not decode (the pixel cache's `bgbench cache`)
        status(f"read {fed['from_cache']:,} of {fed['images']:,} images from the pixel cache "
               f"(decoded once before; --no-cache decodes them anew)")
    report = eval_report(model.spec.name, layout, predictions, cfg.seed)
    report.model_label, report.precision = model_label(model.spec.name, model.spec.to_dict()), str(cfg.precision)
    if getattr(layout, "fallback", ""):
        status(layout.fallback)
        report.split_read = {"split": layout.split, "why": layout.fallback}
    after = {"torch": torch.__version__, "computed_variants": sorted(sets.on_the_fly),
             "protocol_settings": settings_of(cfg.protocol),
             "requested": {"variants": cfg.variants, "split": cfg.split},  # before the data resolved them
             "pixels": fed}  # how many images came decoded from the pixel cache (runtime, not identity)
    config = run.measure.run_config(cfg, layout, run.ranks, own={"variants": sets.names}, after=after)
    return report, config


def eval_report(model: str, layout: Layout, predictions: Dict[str, Predictions], seed: int) -> EvalReport:
    """The report of `predictions` on `layout`, as a fresh run and a stored one show it: accuracies
    and BG-Gap, accuracy per group, and wilds' figures on Waterbirds."""
    report = EvalReport.from_predictions(model, str(layout.root), predictions, seed=seed)
    report.groups = group_results(layout, predictions)
    report.waterbirds = waterbirds_results(layout, predictions, seed=seed)
    return report


def _warn_ten_crop_size(model: torch.nn.Module, cfg: EvalConfig, ranks: Ranks) -> None:
    trained = tuple(model.spec.input_size or ())[-1:]
    if cfg.ten_crop and trained and trained[0] < TEN_CROP_SIZE // 2 and ranks.main:
        status(f"warning: --ten-crop feeds {TEN_CROP_SIZE}-px crops of images resized to 256, but "
               f"{model.spec.name} expects {trained[0]}-px inputs; objects will look "
               f"{TEN_CROP_RESIZE / trained[0]:.1f}x larger than in training")


# -- decoding the next variant ahead -----------------------------------------------------------------
# Decode the next image set while the device computes this one.
#
# Why: eval runs its variants one after another, each a first pass into the pixel cache (`pixel_cache.
# pixels_of`) whose forward starts on its first images. That start costs the card its wait for the
# cache key, the headers and the first task of the next variant, after the last batch of this one:
# tens of milliseconds a variant, and on the GPU run's 450-image variants a quarter of the forward's
# time. On a card the decoding processes finish a variant long before its forward does (16 cores
# decode about 20,000 images/s, a ResNet-50 forward takes 2,700-20,000), so the next variant's pass
# can start as soon as this one's decoding ends, and be written (or well under way) when the loop
# reaches it.
#
# `DecodeAhead(lists)` runs one background thread that makes each list's pass in turn, starting the
# next when the last one's decoding has ended; `pixels(k)` hands list k's `Pixels` to the loop (once
# its pass has started: its images then stream as they land). A pass that fails hands its error to
# the one who asks for that list, as `pixels_of` would have raised it, and the lists after it are
# left alone. `close()` stops it from starting another pass. The images it decoded count as decoded
# in the run's record, not as read from the cache, since this run decoded them.

class DecodeAhead:
    """The pixels of `lists` (each a list of items), decoded one list after another in the
    background; `pixels(k)` is list k's."""

    def __init__(self, lists: Sequence[Sequence]):
        self.lists = [list(items) for items in lists]
        self.futures: List[Future] = [Future() for _ in self.lists]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bgbench-decode-ahead", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for items, future in zip(self.lists, self.futures):
            if self.stopped.is_set() or not future.set_running_or_notify_cancel():
                break
            try:
                pixels = pixels_of(items)
            except BaseException as e:  # the loop gets it when it asks for this list
                future.set_exception(e)
                break
            future.set_result(pixels)
            if pixels.filling is not None:
                pixels.filling.join()  # this list's decoding has ended: the next may start
                if pixels.filling.error is not None:
                    break
        for future in self.futures:  # lists never started: their askers decode them themselves
            future.cancel()

    def pixels(self, k: int) -> Pixels:
        """List k's pixels: the background's pass (waited for until it has started), or, where the
        background stopped before it, `pixels_of` in the caller."""
        try:
            return self.futures[k].result()
        except Exception:
            if self.futures[k].cancelled():
                return pixels_of(self.lists[k])
            raise

    def close(self) -> None:
        """Start no further pass (one under way finishes: its entry is then whole in the cache)."""
        self.stopped.set()


def decode_ahead(lists: Sequence[Sequence], device: str) -> Optional[DecodeAhead]:
    """A `DecodeAhead` of `lists` where it pays: with the pixel cache on and the network on an
    accelerator, which leaves the host's cores idle during the forward. On the CPU the forward
    needs them, and the next pass decoding meanwhile would only reorder the same work; None there."""
    if not enabled() or str(device).startswith("cpu") or len(lists) < 2:
        return None
    return DecodeAhead(lists)


# -- ten-crop ----------------------------------------------------------------------------------------
# Ten-crop test-time augmentation (seed 003, Sec. 5.2): Resize(256), TenCrop(224), logits averaged.
#
# The four corners and the centre, and their horizontal mirrors, each go through the model; the
# ten logit vectors are averaged. Applied to a [0,1] NCHW batch before the forward pass.

TEN_CROP_RESIZE = 256
TEN_CROP_SIZE = 224


def ten_crops(x, resize: int = TEN_CROP_RESIZE, crop: int = TEN_CROP_SIZE):
    """(N,C,H,W) -> (10N,C,crop,crop), crop-major: torchvision's Resize(resize) then TenCrop(crop)."""
    from torchvision.transforms import functional as TF
    x = TF.resize(x, resize, antialias=True)
    return torch.cat(TF.ten_crop(x, crop), dim=0)


def ten_crop_logits(model, x, resize: int = TEN_CROP_RESIZE, crop: int = TEN_CROP_SIZE):
    """The mean of `model`'s logits over the ten crops of each image in `x`."""
    n = x.shape[0]
    logits = model(ten_crops(x, resize, crop))
    return logits.reshape(10, n, -1).mean(dim=0)
