"""Analyses: pure functions over stored tables (no new inference)."""
