"""The edit_drops measure."""
