"""The background shortcut as Whac-A-Mole measures it (its IN-9 gap): a model's accuracy on IN-9's
MIXED-RAND against MIXED-SAME, both read through ImageNet's evaluation crop."""
from ..registry import register_measure
from .probe import In9GapMeasure

MEASURE = register_measure(In9GapMeasure)
