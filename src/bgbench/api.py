"""The Python API: the same operations the CLI runs, callable from a notebook.

Functions here compute and return results; they never write the results store. Record a
result with `bgbench.runs.record(store, result.provenance, result)`.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Optional, Sequence

import torch

from .classes import Mapping
from .data.layout import Layout, resolve_layout
from .evaluation.config import EvalConfig
from .evaluation.predict import mask_checker, predict_items
from .evaluation.results import EvalReport
from .console import status
from .evaluation.tencrop import CROP as TEN_CROP_SIZE, RESIZE as TEN_CROP_RESIZE, ten_crop_logits
from .models.registry import create_model
from .models.spec import BgModel, check_compatible
from .runs import Provenance, model_label

load_model = create_model


def evaluate(model: BgModel | str, data: str | Path | Layout, variants: Optional[Sequence[str]] = None,
             mapping: Mapping | str = Mapping.ARGMAX, batch_size: int = 64, device: str = "cpu",
             progress: bool = True, seed: int = 0, checkpoint: Optional[str] = None,
             ten_crop: bool = False) -> EvalReport:
    """Evaluate a model on IN-9-layout variants: per-variant accuracy and the BG-Gap.

    Args:
        model: a `BgModel` or a model string (with `checkpoint`).
        data: dataset root (or a discovered `Layout`).
        variants: which variant folders to use; default: the 8 IN-9 variants present.
        mapping: decision rule for 1000-class models ('argmax' is the paper's).
        seed: seed of the BG-Gap's bootstrap.
        ten_crop: Resize(256), TenCrop(224), logits averaged over the ten crops (seed 003).

    Returns:
        The report, with `report.provenance` ready for `runs.record`.
    """
    cfg = EvalConfig(variants=list(variants) if variants else None, mapping=getattr(mapping, "value", mapping),
                     batch_size=batch_size, device=device, seed=seed, ten_crop=ten_crop)
    if isinstance(model, str):
        model = create_model(model, checkpoint=checkpoint)
    on_the_fly = _computed_variants(data, cfg.variants)
    on_disk = [v for v in cfg.variants or () if v not in on_the_fly]
    if on_the_fly and "original" not in on_disk:
        on_disk.append("original")
    layout = resolve_layout(data, on_disk or None)
    variants = list(cfg.variants or layout.variants)
    check_compatible(model, layout.classes)
    model = model.to(cfg.device).eval()
    trained = tuple(model.spec.input_size or ())[-1:]
    if cfg.ten_crop and trained and trained[0] < TEN_CROP_SIZE // 2:
        status(f"warning: --ten-crop feeds {TEN_CROP_SIZE}-px crops of images resized to 256, but "
               f"{model.spec.name} expects {trained[0]}-px inputs; objects will look {TEN_CROP_RESIZE / trained[0]:.1f}x "
               f"larger than in training")
    predictions = {}
    for v in variants:
        items, render = layout.items("original" if v in on_the_fly else v), None
        if v in on_the_fly:
            render = blurred_renderer(layout)
        predictions[v] = predict_items(model, items, batch_size=cfg.batch_size, device=cfg.device,
                                       mapping=cfg.mapping, progress=progress, desc=v, render=render,
                                       forward=ten_crop_logits if cfg.ten_crop else None,
                                       checker=mask_checker(layout) if v == "original" else None)
    report = EvalReport.from_predictions(model.spec.name, str(layout.root), predictions, seed=cfg.seed)
    report.model_label = model_label(model.spec.name, model.spec.to_dict())
    config = {**asdict(cfg), "variants": variants, "split": layout.split, "torch": torch.__version__,
              "computed_variants": sorted(on_the_fly)}
    report.provenance = Provenance.of("eval", config, model=model, layout=layout, seed=cfg.seed)
    return report


#: Variants `evaluate` can compute from original + fg_mask + box when their folder is absent.
ON_THE_FLY = ("bg_blurred",)


def _computed_variants(data, variants) -> set:
    """Requested on-the-fly variants whose folder the dataset lacks (e.g. the public IN-9 release)."""
    if not variants or isinstance(data, Layout):
        return set()
    root = Path(data).expanduser()
    return {v for v in variants if v in ON_THE_FLY and not (root / v).is_dir()}


def blurred_renderer(layout: Layout):
    """item -> bg_blurred image, from its original, its mask and its (recorded or recovered) box."""
    from .analyses.boxes import dataset_boxes
    from .console import status
    from .data.images import decode_image, load_mask
    from .errors import DataError
    from .variants.functions import bg_blurred
    boxes, _, source = dataset_boxes(layout)
    status(f"bg_blurred: computed on the fly from original, fg_mask and boxes {source}")

    def render(item):
        if item.image_id not in boxes:
            raise DataError(f"no box for {item.path} ({source}); bg_blurred cannot be computed")
        return bg_blurred(decode_image(item.path), load_mask(layout.mask_path(item.image_id)), boxes[item.image_id])
    return render
