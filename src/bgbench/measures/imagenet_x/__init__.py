"""ImageNet-X (Idrissi et al., ICLR 2023): the error ratio of each of 16 human-labelled factors of
variation on ImageNet's val, background among them, from the imagenet-x package's own annotations
and functions."""
from ..registry import register_measure
from .probe import ImageNetXMeasure

MEASURE = register_measure(ImageNetXMeasure)
