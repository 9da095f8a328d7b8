"""Spurious ImageNet (Neuhaus et al., ICCV 2023): a 1000-class model's spurious score, the mean over
classes of how well the class's probability separates its ImageNet val images from images of its
spurious feature alone."""
from ..registry import register_measure
from .probe import SpuriousImageNetMeasure

MEASURE = register_measure(SpuriousImageNetMeasure)
