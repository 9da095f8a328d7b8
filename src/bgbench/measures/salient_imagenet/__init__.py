"""Salient ImageNet (Singla & Feizi, ICLR 2022): a 1000-class model's accuracy with Gaussian noise on
each class's core regions against noise on its spurious regions (the release's soft masks)."""
from ..registry import register_measure
from .probe import SalientImageNetMeasure

MEASURE = register_measure(SalientImageNetMeasure)
