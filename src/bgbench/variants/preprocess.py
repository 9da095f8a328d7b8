"""Resize(shorter side) + CenterCrop as torchvision does it, applied to an image, its box and mask.

The IN-9 images are 224x224 crops of ImageNet images (`Resize(256)`, `CenterCrop(224)`); the box
and mask must follow the image so that the Appendix A filters and the variants see the crop.
Images are resized with PIL bilinear (torchvision's default for PIL images), masks with nearest.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

import cv2
import numpy as np
from PIL import Image

from ..options import flag
from .functions import Box


@dataclass(frozen=True)
class Preprocess:
    """`resize`: target of the shorter side (None: keep); `crop`: square center crop (None: keep)."""

    resize: Optional[int] = field(default=256, metadata=flag(
        "--resize", "shorter side after resizing (torchvision Resize; default %(default)s)"))
    crop: Optional[int] = field(default=224, metadata=flag(
        "--crop", "center crop size (torchvision CenterCrop; default %(default)s)"))

    def output_size(self, height: int, width: int) -> Tuple[int, int, int, int, int, int]:
        """(resized h, resized w, crop top, crop left, out h, out w) for an input of height x width."""
        h, w = height, width
        if self.resize is not None:  # torchvision _compute_resized_output_size
            short, long = (h, w) if h <= w else (w, h)
            new_short, new_long = self.resize, int(self.resize * long / short)
            h, w = (new_short, new_long) if height <= width else (new_long, new_short)
        if self.crop is None:
            return h, w, 0, 0, h, w
        ch = cw = self.crop
        if ch > h or cw > w:
            raise ValueError(f"a {w}x{h} image is smaller than the {cw}x{ch} crop")
        top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
        return h, w, top, left, ch, cw

    def image(self, image: np.ndarray) -> np.ndarray:
        return self._fit(image, lambda a, w, h: np.asarray(Image.fromarray(a).resize((w, h), Image.BILINEAR)))

    def mask(self, mask: np.ndarray) -> np.ndarray:
        return self._fit(mask.astype(np.uint8),
                         lambda a, w, h: cv2.resize(a, (w, h), interpolation=cv2.INTER_NEAREST)).astype(bool)

    def _fit(self, array: np.ndarray, resize) -> np.ndarray:
        """`array` resized with `resize(array, width, height)` where it needs it, then center-cropped."""
        rh, rw, top, left, oh, ow = self.output_size(*array.shape[:2])
        if (rh, rw) != array.shape[:2]:
            array = resize(array, rw, rh)
        return np.ascontiguousarray(array[top:top + oh, left:left + ow])

    def box(self, box: Box, height: int, width: int) -> Tuple[Optional[Box], float]:
        """The box in output pixels (clipped to the crop) and the share of its area that remains.

        Returns (None, 0.0) when nothing of the box is left.
        """
        rh, rw, top, left, oh, ow = self.output_size(height, width)
        sx, sy = rw / width, rh / height
        x0, y0, x1, y1 = box[0] * sx - left, box[1] * sy - top, box[2] * sx - left, box[3] * sy - top
        area = max(0.0, x1 - x0) * max(0.0, y1 - y0)
        cx0, cy0, cx1, cy1 = max(0.0, x0), max(0.0, y0), min(float(ow), x1), min(float(oh), y1)
        kept = max(0.0, cx1 - cx0) * max(0.0, cy1 - cy0)
        if area <= 0 or kept <= 0:
            return None, 0.0
        out = (int(round(cx0)), int(round(cy0)), int(round(cx1)), int(round(cy1)))
        if out[2] <= out[0] or out[3] <= out[1]:
            return None, 0.0
        return out, kept / area

