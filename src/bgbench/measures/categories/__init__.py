"""The categories measure."""
