"""Saliency alignment (RIVAL10): Grad-CAM on the predicted class against the object mask
(precision, IoU, Dice, Δdensity, coverage, AP), by predicted class, with example overlays."""
from ..registry import register_measure
from .probe import SaliencyMeasure

MEASURE = register_measure(SaliencyMeasure)
