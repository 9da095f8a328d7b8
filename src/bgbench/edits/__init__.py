"""ImageNet-E attribute edits (seed 003): pure edit functions, a registry, pluggable backends."""
from .registry import (ATTRIBUTES, ComplexityEditor, Edit, Inpainter, edits_for, get_complexity_editor, get_inpainter,
                       list_complexity_editors, list_inpainters, register_complexity_editor, register_inpainter)

__all__ = ["ATTRIBUTES", "ComplexityEditor", "Edit", "Inpainter", "edits_for", "get_complexity_editor",
           "get_inpainter", "list_complexity_editors", "list_inpainters", "register_complexity_editor",
           "register_inpainter"]
