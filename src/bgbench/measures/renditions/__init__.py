"""The rendition shortcut (ImageNet-R, Whac-A-Mole's IN-R gap): a 1000-class model's accuracy on
renditions (art, cartoons, sculptures ...) of 200 ImageNet classes against photographs of them."""
from ..registry import register_measure
from .probe import RenditionsMeasure

MEASURE = register_measure(RenditionsMeasure)
