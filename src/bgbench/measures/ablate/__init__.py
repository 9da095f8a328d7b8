"""Attribute ablation (RIVAL10's attr_importance): the object, the background and each attribute
replaced by gray; the drop in accuracy and in true-class probability, per region and class."""
from ..registry import register_measure
from .probe import AblateMeasure

MEASURE = register_measure(AblateMeasure)
