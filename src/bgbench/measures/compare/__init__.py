"""The compare measure."""
