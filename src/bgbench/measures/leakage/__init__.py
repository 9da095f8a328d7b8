"""The leakage measure."""
