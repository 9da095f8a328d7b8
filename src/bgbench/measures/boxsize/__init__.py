"""The boxsize measure."""
