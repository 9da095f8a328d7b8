"""Spurious features (RIVAL10 §5 after Salient ImageNet): each class's top penultimate features by
weight x mean activation, the share of their activation maps on the background, heatmap galleries."""
from ..registry import register_measure
from .probe import FeaturesMeasure

MEASURE = register_measure(FeaturesMeasure)
