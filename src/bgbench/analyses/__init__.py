"""Analyses: pure functions over stored tables (categories, box size, leakage, comparisons, edit drops) and
probes that run a model and record what they measured (noise sensitivity, saliency alignment).

The pure analyses import no torch; the probes' engines do.
"""
