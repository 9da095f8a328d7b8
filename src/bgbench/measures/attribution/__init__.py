"""Feature attribution (RIVAL10 §6): per attribute, the penultimate-layer features whose activation
maps best overlap its mask (IoU at 0.5 of the map's maximum), per class and over all classes."""
from ..registry import register_measure
from .probe import AttributionMeasure

MEASURE = register_measure(AttributionMeasure)
