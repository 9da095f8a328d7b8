"""The noise measure."""
