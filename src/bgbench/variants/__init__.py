"""Pure variant functions and their registry."""
from ..data.layout import IN9_VARIANTS
from .functions import Box, background_strip, composite, tile_to
from .registry import Variant, get_variant, list_variants, register_variant

__all__ = ["Box", "IN9_VARIANTS", "Variant", "background_strip", "composite", "get_variant",
           "list_variants", "register_variant", "tile_to"]
