"""Batched prediction, metrics and evaluation reports."""
from .metrics import Estimate, accuracy, bg_gap, mcnemar, paired_difference, wilson_interval
from .predict import Predictions, predict_items
from .report import EvalReport

__all__ = ["Estimate", "EvalReport", "Predictions", "accuracy", "bg_gap", "mcnemar", "paired_difference",
           "predict_items", "wilson_interval"]
