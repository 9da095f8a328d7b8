"""The texture shortcut (Stylized-ImageNet, Whac-A-Mole's SIN gap): a 1000-class model's accuracy on
stylized copies of ImageNet's val against the val itself."""
from ..registry import register_measure
from .probe import TextureMeasure

MEASURE = register_measure(TextureMeasure)
