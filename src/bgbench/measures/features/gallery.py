"""Heatmap galleries of the top features, one PNG per class, as Salient ImageNet draws them: each
feature's most activating images with its activation map (channel / its maximum, upsampled with
cv2.resize) overlaid, and here the object mask outlined, so that a reader sees whether the
feature fires on the object or around it.

Panels are composed in NumPy and drawn as one image with the row captions beside it: a class
with 5 features x 5 images is one `imshow`, not 25 axes.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence

import numpy as np

GAP = 2  # pixels between panels
OVERLAY_ALPHA = 0.5
DPI = 110  # of the PNG
TITLE_SIZE, CAPTION_SIZE = 8, 7  # points
PAD = 0.1  # inches: between the captions and the mosaic, and around the figure's text
MIN_WIDTH = 4.0  # inches: a class of one image still gets a readable title


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
    """One PNG: the mosaic with each row's caption on its left and the title above (`gallery_figure`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = gallery_figure(rows, title)
    fig.savefig(path, dpi=DPI)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def gallery_figure(rows: Sequence[GalleryRow], title: str):
    """The gallery's matplotlib figure, sized to what it holds: the captions' column as wide as the
    widest caption, the title wrapped to the figure's width with room above the mosaic for its
    lines (a long class name on a class of two images made one line wider than the figure, cut
    at both ends). Text is measured by matplotlib's own renderer, at the DPI it is written at."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    canvas = mosaic(rows)
    panel_h = canvas.shape[0] / len(rows)
    scale = 1.3 / max(panel_h, 1)  # about 1.3 inches per panel row
    image_w, image_h = canvas.shape[1] * scale, canvas.shape[0] * scale
    fig = plt.figure(figsize=(image_w + 3.2, image_h + 0.5), dpi=DPI)
    renderer = fig.canvas.get_renderer()
    captions = [fig.text(0, 0, row.caption, ha="right", va="center", fontsize=CAPTION_SIZE) for row in rows]
    caption_w = max(t.get_window_extent(renderer).width for t in captions) / DPI
    for t in captions:
        t.remove()
    left = caption_w + 2 * PAD
    fig_w = max(left + image_w + PAD, MIN_WIDTH)
    fig.set_size_inches(fig_w, image_h + 0.5)
    head = fig.text(0.5, 1, title, ha="center", va="top", fontsize=TITLE_SIZE)
    for width in range(len(title), 0, -2):  # the longest lines that fit the figure's width
        head.set_text("\n".join(textwrap.wrap(title, width, break_long_words=True)))
        if head.get_window_extent(renderer).width <= (fig_w - 2 * PAD) * DPI:
            break
    title_h = head.get_window_extent(renderer).height / DPI
    fig_h = image_h + title_h + 3 * PAD
    fig.set_size_inches(fig_w, fig_h)
    head.set_y(1 - PAD / fig_h)
    ax = fig.add_axes(((fig_w - image_w - PAD) / fig_w, PAD / fig_h, image_w / fig_w, image_h / fig_h))
    ax.imshow(canvas, interpolation="nearest")
    ax.axis("off")
    for i, row in enumerate(rows):
        ax.text(-PAD / scale, (i + 0.5) * panel_h, row.caption, ha="right", va="center", fontsize=CAPTION_SIZE,
                transform=ax.transData)
    return fig
