"""ImageNet-X's per-factor error ratios, computed by the `imagenet-x` package (never reimplemented).

ImageNet-X labels each val image with the factor that most makes it unusual (its *top* factor:
pose, background, pattern, ...). A factor's error ratio is the model's error on the images of that
factor over its error on all annotated images: above 1, the factor makes the model fail more often.
The package's `load_annotations()` (top factors, its prototype images left out), then
`augment_model_predictions`, `compute_factor_accuracies` and `error_ratio` give every number; they
work on any subset of the val, which `load_model_predictions` (all 50,000 images) does not.

The package gives no intervals. Each ratio's 95% interval here is a percentile bootstrap over the
annotated images (multinomial resampling, in chunks), of the same ratio (1 - acc_factor) / (1 -
acc_all) that `error_ratio` computes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional, Sequence

import numpy as np

from ...evaluation.metrics import percent, REPLICATES, finite_or_none, accuracy
from ..result import Summary, estimate_row

#: The headline's factor: the one that sits beside BG-Gap.
BACKGROUND = "background"
CHUNK = 100


@lru_cache(maxsize=1)
def annotations():
    """The package's top-factor val annotations, prototypes left out (read once: about a second)."""
    import imagenet_x
    return imagenet_x.load_annotations(which_factor="top", partition="val", filter_prototypes=True)


@lru_cache(maxsize=1)
def val_labels() -> Dict[str, int]:
    """ImageNet val file name -> class, from the package's filename_label.csv (all 50,000 images)."""
    import pandas as pd
    from imagenet_x.utils import get_annotation_path
    table = pd.read_csv(get_annotation_path() / "filename_label.csv")
    return dict(zip(table["file_name"], table["label"].astype(int)))


def factors() -> List[str]:
    import imagenet_x
    return list(imagenet_x.FACTORS)


def model_annotations(image_ids: Sequence[str], preds: Sequence[int]):
    """The package's per-image table for one model's predictions (file name, predicted class)."""
    import imagenet_x
    import pandas as pd
    predictions = pd.DataFrame({"file_name": list(image_ids), "predicted_class": np.asarray(preds, dtype=np.int64)})
    return imagenet_x.augment_model_predictions(annotations(), {"model": predictions})


@dataclass
class ImageNetXSummary(Summary):
    """Per factor: its annotated images, the model's accuracy on them and its error ratio (value,
    lo, hi); `accuracy`: on every annotated image (the package's 'average')."""

    factors: Dict[str, dict]
    accuracy: dict
    images: int
    notes: List[str] = field(default_factory=list)

    @property
    def background(self) -> dict:
        return self.factors[BACKGROUND]["error_ratio"]

    def document(self) -> dict:
        return {"images": self.images, "accuracy": self.accuracy, "factors": self.factors}

    def metrics(self) -> List[tuple]:
        """imagenet_x_error_ratio and imagenet_x_accuracy (variant: the factor; '' for every
        annotated image's accuracy)."""
        rows = [estimate_row("imagenet_x_accuracy", "", self.accuracy)]
        for name, f in self.factors.items():
            rows += [estimate_row("imagenet_x_error_ratio", name, f["error_ratio"], f["images"]),
                     ("imagenet_x_accuracy", name, f["accuracy"], None, None, f["images"])]
        return rows

    def lines(self) -> List[str]:
        lines = [f"ImageNet-X error ratios{self.of_run()}: error on a factor's images "
                 f"/ error on all {self.images} annotated images ({percent(self.accuracy['value'])} accuracy); > 1: "
                 "the factor makes the model fail more", f"{'factor':<18}{'images':>7}{'acc':>8}{'error ratio':>13}"
                 f"{'95% CI':>17}"]
        for name, f in sorted(self.factors.items(), key=lambda kv: -_sortable(kv[1]["error_ratio"]["value"])):
            r = f["error_ratio"]
            ci = f"[{r['lo']:.2f}, {r['hi']:.2f}]" if finite_or_none(r["lo"]) is not None else ""
            value = f"{r['value']:.2f}" if finite_or_none(r["value"]) is not None else "–"
            lines.append(f"{name:<18}{f['images']:>7}{percent(f['accuracy']):>8}{value:>13}{ci:>17}")
        return lines + self.notes


def _sortable(v) -> float:
    return v if finite_or_none(v) is not None else -math.inf


def summarize_imagenet_x(image_ids: Sequence[str], preds: Sequence[int], seed: int = 0,
                         replicates: int = REPLICATES) -> ImageNetXSummary:
    """Every factor's error ratio by the package's functions, with bootstrap intervals."""
    import imagenet_x
    names = factors()
    table = model_annotations(image_ids, preds)
    acc = imagenet_x.compute_factor_accuracies(table, names, error_type="is_correct")
    ratio = imagenet_x.error_ratio(acc)
    correct = table["is_correct"].to_numpy(dtype=np.float64)
    onehot = table[names].to_numpy(dtype=np.float64)
    n = len(table)
    lo, hi = _bootstrap(correct, onehot, seed, replicates)
    out = {}
    for k, name in enumerate(names):
        images = int(onehot[:, k].sum())
        value = float(ratio[name].iloc[0]) if images else math.nan
        # the package gives no ratio where it cannot (no image of the factor, or none correct at all):
        # neither is an interval given then
        out[name] = {"images": images, "accuracy": float(acc[name].iloc[0]) if images else math.nan,
                     "error_ratio": {"value": value, "lo": lo[k] if value == value else math.nan,
                                     "hi": hi[k] if value == value else math.nan, "n": images}}
    # the package's own 'average' as the value, beside the Wilson interval of the same images
    overall = {**accuracy(correct.astype(bool)).as_dict(), "value": float(acc["average"].iloc[0])} if n else \
        {"value": math.nan, "lo": math.nan, "hi": math.nan, "n": 0}
    return ImageNetXSummary(out, overall, n)


def _replicates(corrects: Sequence[np.ndarray], onehot: np.ndarray, seed: int, replicates: int) -> List[np.ndarray]:
    """Each model's (replicates, factors) error ratios (1 - acc_f) / (1 - acc_all), of its per-image
    `correct`, over the same multinomial resamples of the images (drawn in chunks)."""
    n = len(onehot)
    rng = np.random.default_rng(seed)
    out: List[list] = [[] for _ in corrects]
    for start in range(0, replicates, CHUNK):
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=min(CHUNK, replicates - start)).astype(np.float64)
        for ratios, correct in zip(out, corrects):
            with np.errstate(invalid="ignore", divide="ignore"):
                acc_f = (counts @ (onehot * correct[:, None])) / (counts @ onehot)
                ratios.append((1 - acc_f) / (1 - (counts @ correct) / n)[:, None])
    return [np.concatenate(r) for r in out]


def _bootstrap(correct: np.ndarray, onehot: np.ndarray, seed: int, replicates: int):
    """Percentile intervals of each factor's (1 - acc_f) / (1 - acc_all) over resampled images."""
    n, k = onehot.shape
    if n == 0:
        return [math.nan] * k, [math.nan] * k
    r = _replicates([correct], onehot, seed, replicates)[0]
    lo, hi = [], []
    for j in range(k):
        col = r[:, j][np.isfinite(r[:, j])]
        a, b = np.percentile(col, [2.5, 97.5]) if col.size >= 0.5 * len(r) else (math.nan, math.nan)
        lo.append(float(a))
        hi.append(float(b))
    return lo, hi


def ratio_difference(base: Sequence[tuple], derived: Sequence[tuple], factor: str = BACKGROUND, seed: int = 0,
                     replicates: int = REPLICATES) -> Optional[dict]:
    """A factor's error ratio of `derived` minus `base` (rows: (image id, predicted class), the same
    images): both ratios by the package's functions; the interval from resampling the annotated
    images once for both models (a paired bootstrap)."""
    import imagenet_x
    names = factors()
    tables = [model_annotations([r[0] for r in rows], [r[1] for r in rows]) for rows in (base, derived)]
    if list(tables[0]["file_name"]) != list(tables[1]["file_name"]) or not len(tables[0]):
        return None
    values = [float(imagenet_x.error_ratio(imagenet_x.compute_factor_accuracies(t, names))[factor].iloc[0])
              for t in tables]
    k = names.index(factor)
    onehot = tables[0][names].to_numpy(dtype=np.float64)[:, k:k + 1]
    base_r, derived_r = _replicates([t["is_correct"].to_numpy(dtype=np.float64) for t in tables], onehot, seed,
                                    replicates)
    d = (derived_r - base_r)[:, 0]
    d = d[np.isfinite(d)]
    value = values[1] - values[0]
    if d.size < 0.5 * replicates or value != value:
        return {"value": value, "lo": math.nan, "hi": math.nan, "n": int(onehot.sum())}
    lo, hi = np.percentile(d, [2.5, 97.5])
    return {"value": value, "lo": float(lo), "hi": float(hi), "n": int(onehot.sum())}
