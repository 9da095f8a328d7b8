"""The attribution measure."""
