"""Dataset layout discovery and validation, decoding, and the Synthetic-9 generator."""
from .images import decode_image, load_mask
from .layout import Item, Layout, discover

__all__ = ["Item", "Layout", "decode_image", "discover", "load_mask"]
