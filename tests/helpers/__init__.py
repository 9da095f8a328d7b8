"""Shared test helpers: the measure contract, and scripts run under torchrun."""
