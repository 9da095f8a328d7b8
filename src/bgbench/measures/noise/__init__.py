"""Noise sensitivity (RIVAL10): accuracy under foreground-only and background-only Gaussian noise,
and the relative foreground sensitivity (RFS); with region 'attributes', noise on each attribute."""
from ..registry import register_measure
from .probe import NoiseMeasure

MEASURE = register_measure(NoiseMeasure)
