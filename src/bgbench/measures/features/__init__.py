"""The features measure."""
