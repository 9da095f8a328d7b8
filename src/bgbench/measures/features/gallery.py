"""Heatmap galleries of the top features, one PNG per class, as Salient ImageNet draws them: each
feature's most activating images with its activation map (channel / its maximum, upsampled with
cv2.resize) overlaid, and here the object mask outlined, so that a reader sees whether the
feature fires on the object or around it.

Panels are composed in NumPy and drawn as one image with the row captions beside it: a class
with 5 features x 5 images is one `imshow`, not 25 axes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence

import numpy as np

GAP = 2  # pixels between panels
OVERLAY_ALPHA = 0.5


@dataclass
class GalleryRow:
    """One feature's row: its caption and, per top image, (image (H,W,3) in [0,1], map (h,w), mask (H,W) bool)."""

    caption: str
    panels: List[tuple]


def activation_map(cell_map: np.ndarray, image_hw) -> np.ndarray:
    """Salient ImageNet's map: the channel over its maximum, cv2.resize (bilinear) to the image;
    negative values (none after a ReLU) shown as 0. A map that is zero everywhere stays zero."""
    import cv2
    a = np.maximum(np.asarray(cell_map, dtype=np.float32), 0)
    top = float(a.max())
    a = a / top if top > 0 else a
    return np.clip(cv2.resize(a, (int(image_hw[1]), int(image_hw[0])), interpolation=cv2.INTER_LINEAR), 0, 1)


def outline(mask: np.ndarray) -> np.ndarray:
    """The mask's inner border (a pixel of the mask with a 4-neighbour outside it)."""
    m = np.asarray(mask, dtype=bool)
    inner = m.copy()
    inner[1:, :] &= m[:-1, :]
    inner[:-1, :] &= m[1:, :]
    inner[:, 1:] &= m[:, :-1]
    inner[:, :-1] &= m[:, 1:]
    return m & ~inner


def overlay(image: np.ndarray, cell_map: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """An RGB panel: the image under the jet-coloured activation map, the mask outlined in white."""
    from matplotlib import colormaps
    heat = activation_map(cell_map, image.shape[:2])
    rgb = (1 - OVERLAY_ALPHA) * np.clip(image, 0, 1) + OVERLAY_ALPHA * colormaps["jet"](heat)[..., :3]
    rgb[outline(mask)] = 1.0
    return rgb


def mosaic(rows: Sequence[GalleryRow]) -> np.ndarray:
    """The panels of every row side by side, rows stacked, on a white ground."""
    height = max(p[0].shape[0] for r in rows for p in r.panels)
    width = max(p[0].shape[1] for r in rows for p in r.panels)
    cols = max(len(r.panels) for r in rows)
    canvas = np.ones((len(rows) * (height + GAP) - GAP, cols * (width + GAP) - GAP, 3))
    for i, row in enumerate(rows):
        for j, (image, cell_map, mask) in enumerate(row.panels):
            y, x = i * (height + GAP), j * (width + GAP)
            canvas[y:y + image.shape[0], x:x + image.shape[1]] = overlay(image, cell_map, mask)
    return canvas


def write_gallery(rows: Sequence[GalleryRow], title: str, path: Path) -> Path:
    """One PNG: the mosaic with each row's caption on its left."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas = mosaic(rows)
    panel_h = canvas.shape[0] / len(rows)
    scale = 1.3 / max(panel_h, 1)  # about 1.3 inches per panel row
    fig_w, fig_h = canvas.shape[1] * scale + 3.2, canvas.shape[0] * scale + 0.5
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes((3.1 / fig_w, 0.05 / fig_h, canvas.shape[1] * scale / fig_w, canvas.shape[0] * scale / fig_h))
    ax.imshow(canvas, interpolation="nearest")
    ax.axis("off")
    for i, row in enumerate(rows):
        ax.text(-0.02 * canvas.shape[1], (i + 0.5) * panel_h, row.caption, ha="right", va="center", fontsize=7,
                transform=ax.transData)
    fig.suptitle(title, fontsize=8, y=1 - 0.02 / fig_h)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
