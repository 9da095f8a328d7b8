"""The watermark shortcut (ImageNet-W, Whac-A-Mole): accuracy on watermarked copies of the images
against the clean ones, and the Carton gap, the same on the class the watermark is a shortcut to."""
from ..registry import register_measure
from .probe import WatermarkMeasure

MEASURE = register_measure(WatermarkMeasure)
