"""Example Grad-CAM overlays of a saliency probe: which images to show, one PNG per example
(what the report's saliency gallery shows) and one grid of them all.

The examples are chosen from the per-image rows, not by position: for each predicted class, the
most and the least aligned images by precision (RIVAL10 looks at the extremes to find spurious
background features). An all-zero map (precision NaN) ranks as the least aligned.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np


@dataclass
class Example:
    image_id: str
    pred: int
    precision: float
    rank: str  # 'most aligned' or 'least aligned'


def choose_examples(rows: Sequence[Any], per_class: int) -> List[Example]:
    """For each predicted class (ascending), up to `per_class` images: the ceil(k/2) most aligned
    by precision, then the floor(k/2) least aligned, never the same image twice.

    rows: the probe's rows (`SaliencyRow`: image_id, pred, precision, ...).
    """
    if per_class <= 0:
        return []
    by_class: Dict[int, List[tuple]] = {}
    for r in rows:
        p = r.precision
        score = -math.inf if p is None or math.isnan(p) else float(p)
        by_class.setdefault(int(r.pred), []).append((score, r.image_id))
    chosen: List[Example] = []
    for pred in sorted(by_class):
        ranked = sorted(by_class[pred], key=lambda s: (-s[0], s[1]))  # best first, ties by image id
        best = ranked[: math.ceil(per_class / 2)]
        worst = [s for s in reversed(ranked) if s not in best][: per_class // 2]
        chosen += [Example(i, pred, s, "most aligned") for s, i in best]
        chosen += [Example(i, pred, s, "least aligned") for s, i in worst]
    return chosen


#: How much of the colour-mapped saliency is blended over the image (as in the grid's imshow).
ALPHA = 0.45


def overlay_image(image: np.ndarray, cam: np.ndarray, mask: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """The image (H,W,3 in [0,1]) with its map (H,W in [0,1]) blended in the 'jet' colours and
    the mask's outline in white: an (H,W,3) uint8 array."""
    import matplotlib
    colours = matplotlib.colormaps["jet"](np.clip(np.nan_to_num(cam), 0, 1))[..., :3]
    out = (1 - alpha) * np.clip(image, 0, 1) + alpha * colours
    out[outline(mask)] = 1.0
    return np.round(255 * out).astype(np.uint8)


def outline(mask: np.ndarray) -> np.ndarray:
    """The mask's pixels with a 4-neighbour outside it (or on the image's border): its outline.
    An empty or full mask has none."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any() or mask.all():
        return np.zeros_like(mask)
    padded = np.pad(mask, 1, constant_values=False)
    inner = padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:]
    return mask & ~inner


def write_example_overlays(panels: Sequence[tuple], folder: Path) -> List[dict]:
    """One PNG per example in `folder` (`<n>.png`, in the examples' order); returns, per example,
    what the report needs to show it: image id, label, predicted class, precision (None for an
    all-zero map), rank, and the file. panels: (Example, label, image, map, mask)."""
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for n, (ex, label, img, cam, mask) in enumerate(panels):
        path = folder / f"{n:03d}.png"
        Image.fromarray(overlay_image(img, cam, mask)).save(path)
        written.append({"image_id": ex.image_id, "label": int(label), "pred": int(ex.pred),
                        "precision": None if math.isinf(ex.precision) else float(ex.precision), "rank": ex.rank,
                        "overlay": str(path)})
    return written


def write_overlays(panels: Sequence[tuple], class_name, path: Path) -> Path:
    """A grid with one row per predicted class: each image with its map overlaid and the mask
    outlined. panels: (Example, image (H,W,3) in [0,1], map (H,W) in [0,1], mask (H,W) bool)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    path.parent.mkdir(parents=True, exist_ok=True)
    preds = sorted({ex.pred for ex, *_ in panels})
    cols = max(sum(1 for ex, *_ in panels if ex.pred == p) for p in preds)
    fig, axes = plt.subplots(len(preds), cols, figsize=(2.4 * cols, 2.6 * len(preds)), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    filled = {p: 0 for p in preds}
    for ex, img, cam, mask in panels:
        row = preds.index(ex.pred)
        ax = axes[row, filled[ex.pred]]
        filled[ex.pred] += 1
        ax.imshow(np.clip(img, 0, 1))
        ax.imshow(cam, cmap="jet", alpha=0.45, vmin=0, vmax=1)
        if mask.any() and not mask.all():
            ax.contour(mask.astype(float), levels=[0.5], colors="white", linewidths=0.8)
        prec = "all-zero map" if math.isinf(ex.precision) else f"precision {ex.precision:.2f}"
        ax.set_title(f"pred {class_name(ex.pred)[:14]}: {ex.rank}\n{ex.image_id.split('/')[-1][:20]}, {prec}",
                     fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
