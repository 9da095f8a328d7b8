"""BG-BLURRED (paper Fig. 15) computed on the fly, for datasets without its folder (the public release).

It needs the foreground's box, which comes from the dataset's records or is recovered from ONLY-BG-B
(`boxes.py`), so it lives here, above evaluation, and `bgbench.evaluate` passes it down as a renderer.
"""
from __future__ import annotations

from ..console import status
from ..data.images import decode_image, read_mask
from ..data.layout import Layout
from ..errors import DataError
from .functions import bg_blurred
from ..data.boxes import dataset_boxes


def blurred_renderer(layout: Layout):
    """item of `original` -> its bg_blurred image, from its original, its mask and its box."""
    boxes, _, source = dataset_boxes(layout)
    status(f"bg_blurred: computed on the fly from original, fg_mask and boxes {source}")

    def render(item):
        if item.image_id not in boxes:
            raise DataError(f"no box for {item.path} ({source}); bg_blurred cannot be computed")
        return bg_blurred(decode_image(item.path), read_mask(layout.mask_path(item.image_id)), boxes[item.image_id])
    return render
