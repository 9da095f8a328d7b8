"""The challenge measure."""
