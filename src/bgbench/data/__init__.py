"""Dataset layout discovery and validation, decoding, the Synthetic-9 drawing, and the one dataset
writer (manifest, pool, shards) that synth, build and edit share."""
from .images import decode_image, load_mask
from .layout import IN9_VARIANTS, Item, Layout, discover
from .resolve import resolve_layout

__all__ = ["IN9_VARIANTS", "Item", "Layout", "decode_image", "discover", "load_mask", "resolve_layout"]
