"""ImageNet-E attribute edits (seed 003): pure edit functions, a registry, pluggable backends."""
from .backends import (ComplexityEditor, Inpainter, get_complexity_editor, get_inpainter, list_complexity_editors,
                       list_inpainters, register_complexity_editor, register_inpainter)
from .registry import ATTRIBUTES, Edit, edits_for

__all__ = ["ATTRIBUTES", "ComplexityEditor", "Edit", "Inpainter", "edits_for", "get_complexity_editor",
           "get_inpainter", "list_complexity_editors", "list_inpainters", "register_complexity_editor",
           "register_inpainter"]
