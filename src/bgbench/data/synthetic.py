"""Synthetic-9: procedurally drawn images with exact masks and boxes (the drawing only).

Each image has a foreground whose shape and colour band determine its class (random size,
position, small rotation, and a random shade within the class's hue band) over a background *texture family* that agrees with the class with probability
`bg_correlation`. The texture is the shortcut: it is far easier to learn than the shape, so a
model trained on ORIGINAL leans on it and shows a large BG-Gap, while one trained on MIXED-RAND
cannot. That is the paper's central finding (Fig. 5) in miniature, on a CPU, in minutes.

The object carries attribute parts (RIVAL10's attributes in miniature), each with its exact mask
(`Sample.attributes`); they change brightness only, so the hue band stays the colour cue:

- `dot`, a white disc at the object's deepest interior point: class-defining for 00, 03, 06;
- `stripes`, darker diagonal bands over the interior: class-defining for 01, 04, 07;
- `notch`, a black square at the top of the interior: class-defining for 02, 05, 08;
- `rim`, the outer band of the object at half brightness: shared, on half of all images.

The parts are disjoint (the class part lies inside the band the rim would take) and drawn after
everything else, from the same random stream, so the shape, colour and background of every image
do not depend on the parts.

Rendering the IN-9 variants of these images and writing the dataset is `bgbench.variants.synth`
(a layer above, since it needs the variant functions).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import cv2
import numpy as np

from .manifest import Box, mask_box

SYNTH_CLASSES = (
    "00_circle", "01_square", "02_triangle", "03_cross", "04_ring",
    "05_star", "06_diamond", "07_crescent", "08_bar",
)
TEXTURES = ("hstripes", "vstripes", "checker", "dots", "diagonal", "rings", "gradient", "grid", "speckle")
SPLIT_CODES = {"val": 0, "train": 1}


#: Smallest image side that leaves room for a foreground and a background strip.
MIN_SIZE = 16


#: The class-defining part of each class, and the parts any class may carry.
CLASS_PARTS = ("dot", "stripes", "notch")
SHARED_PARTS = ("rim",)
ATTRIBUTES = tuple(sorted(CLASS_PARTS + SHARED_PARTS))
RIM_RATE = 0.5
#: How a part is painted: its pixels' brightness scaled (rim, stripes), or set (dot white, notch black).
PART_SHADE, PART_VALUE = {"rim": 0.5, "stripes": 0.55}, {"dot": 255, "notch": 0}


def class_part(label: int) -> str:
    """The part that class `label` always carries (dot: 0, 3, 6; stripes: 1, 4, 7; notch: 2, 5, 8)."""
    return CLASS_PARTS[label % len(CLASS_PARTS)]


@dataclass
class Sample:
    """One generated image with its exact annotation."""

    image: np.ndarray  # HxWx3 uint8
    mask: np.ndarray  # HxW bool
    box: Box
    label: int
    texture: int
    attributes: Dict[str, np.ndarray] = field(default_factory=dict)  # part -> HxW bool, present parts only


def _ring(points: int, start: float, radius) -> np.ndarray:
    """`points` vertices evenly round the unit circle from angle `start`, at `radius` (one or each)."""
    a = np.linspace(0, 2 * np.pi, points + 1)[:-1] + start
    return np.stack([radius * np.cos(a), radius * np.sin(a)], 1)


_W = 0.32  # the cross's half width
#: Unit-scale outlines of the polygon shapes (centered at 0, radius ~1), before rotation.
_OUTLINES = {
    1: _ring(4, np.pi / 4, 1.1),  # square
    2: _ring(3, -np.pi / 2, 1.15),  # triangle
    3: np.array([[-_W, -1], [_W, -1], [_W, -_W], [1, -_W], [1, _W], [_W, _W], [_W, 1], [-_W, 1],  # cross / plus
                 [-_W, _W], [-1, _W], [-1, -_W], [-_W, -_W]]),
    5: _ring(10, -np.pi / 2, np.where(np.arange(10) % 2 == 0, 1.15, 0.45)),  # five-pointed star
    6: np.array([[0, -1.15], [0.6, 0], [0, 1.15], [-0.6, 0]]),  # diamond (a rhombus, taller than wide)
    8: np.array([[-1.1, -0.28], [1.1, -0.28], [1.1, 0.28], [-1.1, 0.28]]),  # long bar
}


def draw_shape_mask(kind: int, size: int, rng: np.random.Generator, max_rotation: float = np.pi / 6) -> np.ndarray:
    """A boolean mask of one class-`kind` shape at a random scale, rotation (up to `max_rotation`) and position."""
    canvas = np.zeros((size, size), np.uint8)
    radius = rng.uniform(0.16, 0.3) * size
    margin = int(np.ceil(radius * 1.2)) + 1
    cx, cy = rng.uniform(margin, size - margin, size=2)
    if kind == 0:  # circle
        cv2.circle(canvas, (int(cx), int(cy)), int(radius), 1, -1, lineType=cv2.LINE_8)
    elif kind == 4:  # ring
        cv2.circle(canvas, (int(cx), int(cy)), int(radius), 1, -1)
        cv2.circle(canvas, (int(cx), int(cy)), int(radius * 0.55), 0, -1)
    elif kind == 7:  # crescent: a disc minus an offset disc
        cv2.circle(canvas, (int(cx), int(cy)), int(radius), 1, -1)
        ang = rng.uniform(0, 2 * np.pi)
        off = radius * 0.5
        cv2.circle(canvas, (int(cx + off * np.cos(ang)), int(cy + off * np.sin(ang))), int(radius * 0.85), 0, -1)
    else:
        pts = _OUTLINES[kind]
        ang = rng.uniform(-max_rotation, max_rotation)
        rot = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
        pts = pts @ rot.T * radius + np.array([cx, cy])
        cv2.fillPoly(canvas, [np.round(pts).astype(np.int32)], 1)
    return canvas.astype(bool)


#: The textures that are a function of the pixel grid, the period and the phase alone.
_PATTERNS = {
    "hstripes": lambda xx, yy, period, phase: ((yy + phase) // (period / 2)) % 2 == 0,
    "vstripes": lambda xx, yy, period, phase: ((xx + phase) // (period / 2)) % 2 == 0,
    "checker": lambda xx, yy, period, phase: (((xx + phase) // (period / 2)) + ((yy + phase) // (period / 2))) % 2 == 0,
    "dots": lambda xx, yy, period, phase: (((xx + phase) % period - period / 2) ** 2
                                          + ((yy + phase) % period - period / 2) ** 2) < (period / 4) ** 2,
    "diagonal": lambda xx, yy, period, phase: ((xx + yy + phase) // (period / 2)) % 2 == 0,
    "grid": lambda xx, yy, period, phase: (((xx + phase) % period) < period * 0.2) | (((yy + phase) % period)
                                                                                        < period * 0.2),
}


def draw_texture(family: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """A size x size background of texture `family` with random colours and scale."""
    c1 = rng.integers(0, 256, 3)
    c2 = rng.integers(0, 256, 3)
    while np.abs(c1 - c2).sum() < 150:  # keep the pattern visible
        c2 = rng.integers(0, 256, 3)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    period = rng.uniform(0.1, 0.2) * size
    phase = rng.uniform(0, period)
    name = TEXTURES[family]
    if name in _PATTERNS:
        sel = _PATTERNS[name](xx, yy, period, phase)
    elif name == "rings":
        cx, cy = rng.uniform(0, size, 2)
        sel = (np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2) // (period / 2)) % 2 == 0
    elif name == "gradient":
        ang = rng.uniform(0, 2 * np.pi)
        g = (np.cos(ang) * xx + np.sin(ang) * yy)
        g = (g - g.min()) / max(float(np.ptp(g)), 1e-6)
        return (c1[None, None] * (1 - g[..., None]) + c2[None, None] * g[..., None]).astype(np.uint8)
    else:  # speckle: blocky random noise
        cells = rng.random((size // 4 + 1, size // 4 + 1)) < 0.5
        sel = np.kron(cells, np.ones((4, 4), bool))[:size, :size]
    return np.where(sel[..., None], c1, c2).astype(np.uint8)


def _foreground_colour(label: int, background: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A colour in the class's hue band that stands out from the background under the mask.

    The hue band is the foreground's texture cue (one of 9 bands of 40 degrees); saturation and
    value are random. Among a few draws, the one most distinct from the background wins.
    """
    under = background[mask].astype(np.int32)
    best, best_dist = None, -1.0
    for _ in range(12):
        hue = (label * 20 + rng.uniform(-6, 6)) % 180
        hsv = np.array([[[hue, rng.uniform(150, 255), rng.uniform(150, 255)]]], np.uint8)
        colour = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0, 0].astype(np.int64)
        dist = float(np.abs(under - colour).sum(axis=1).mean())
        if dist > best_dist:
            best, best_dist = colour, dist
        if dist > 180:
            break
    return best


def correlated_family(label: int, i: int, per_class: int, correlation: float, num_classes: int = 9) -> int:
    """The background family of image `i` of class `label` under an exact correlation: the first
    round(correlation x per_class) images of each class get their own class's family, the others
    each other family in turn, so every minority group (class, other family) is about equally large."""
    own = int(round(correlation * per_class))
    if i < own:
        return label
    others = [c for c in range(num_classes) if c != label]
    return others[(i - own) % len(others)]


def draw_sample(label: int, size: int, bg_correlation: float, rng: np.random.Generator,
                num_classes: int = 9, family: Optional[int] = None) -> Sample:
    """Draw one Synthetic-9 image of class `label` (on background `family` when given, else on the
    class's own family with probability `bg_correlation` and a uniformly drawn one otherwise)."""
    if family is None:
        family = label if rng.random() < bg_correlation else int(rng.integers(num_classes))
    background = draw_texture(family, size, rng)
    mask = draw_shape_mask(label, size, rng)
    colour = _foreground_colour(label, background, mask, rng)
    shade = rng.normal(0, 8, (size, size, 1))  # mild texture so the object is not a flat stencil
    fg = np.clip(colour[None, None] + shade, 0, 255).astype(np.uint8)
    image = np.where(mask[..., None], fg, background)
    image, parts = draw_parts(image, mask, label, rng)
    return Sample(image=image, mask=mask, box=mask_box(mask), label=label, texture=family, attributes=parts)


def _part_masks(mask: np.ndarray, label: int, rng: np.random.Generator) -> Dict[str, np.ndarray]:
    """Every part's mask for this object (before deciding which are present)."""
    m8 = mask.astype(np.uint8)
    depth = cv2.distanceTransform(m8, cv2.DIST_L2, 3)
    inradius = float(depth.max())
    width = max(1, int(round(0.2 * inradius)))
    interior = cv2.erode(m8, np.ones((2 * width + 1, 2 * width + 1), np.uint8)).astype(bool)
    parts = {"rim": mask & ~interior}
    yy, xx = np.mgrid[0:mask.shape[0], 0:mask.shape[1]]
    part = class_part(label)
    if part == "dot":
        cy, cx = np.unravel_index(int(np.argmax(depth)), depth.shape)
        radius = max(1.5, 0.45 * inradius)
        parts["dot"] = interior & ((yy - cy) ** 2 + (xx - cx) ** 2 <= radius ** 2)
    elif part == "stripes":
        period = max(3.0, 0.8 * inradius)
        angle = rng.uniform(0, np.pi)
        phase = (np.cos(angle) * xx + np.sin(angle) * yy) / period
        parts["stripes"] = interior & (np.floor(phase) % 2 == 0)
    else:  # notch: a square at the top of the interior
        rows = np.flatnonzero(interior.any(axis=1))
        if rows.size:
            top = rows[0]
            cols = np.flatnonzero(interior[top])
            cx, side = int(cols[cols.size // 2]), max(2, int(round(0.8 * inradius)))
            box = (yy >= top) & (yy < top + side) & (np.abs(xx - cx) <= side // 2)
            parts["notch"] = interior & box
        else:
            parts["notch"] = np.zeros_like(mask)
    return parts


def draw_parts(image: np.ndarray, mask: np.ndarray, label: int, rng: np.random.Generator):
    """The image with its parts painted, and part -> mask of the parts it has (nonempty)."""
    masks = _part_masks(mask, label, rng)
    if rng.random() >= RIM_RATE:
        del masks["rim"]
    out = image.astype(np.float32)
    for name, m in masks.items():
        out[m] = out[m] * PART_SHADE[name] if name in PART_SHADE else PART_VALUE[name]
    return out.astype(np.uint8), {k: m for k, m in masks.items() if m.any()}


def sample_at(label: int, i: int, size: int = 64, seed: int = 0, split: str = "val",
              bg_correlation: float = 0.95, family: Optional[int] = None) -> Sample:
    """The `i`-th image of class `label`: a function of these arguments alone, so any process
    (a worker, a shard) draws the very same image."""
    if split not in SPLIT_CODES:
        raise ValueError(f"split must be one of {sorted(SPLIT_CODES)}, not {split!r}")
    rng = np.random.default_rng([seed, SPLIT_CODES[split], label, i])
    return draw_sample(label, size, bg_correlation, rng, family=family)


def generate(per_class: int, size: int = 64, seed: int = 0, split: str = "val",
             bg_correlation: float = 0.95) -> List[Sample]:
    """All samples of one split, class-major. Splits draw from independent seed streams."""
    return [sample_at(label, i, size, seed, split, bg_correlation)
            for label in range(len(SYNTH_CLASSES)) for i in range(per_class)]
