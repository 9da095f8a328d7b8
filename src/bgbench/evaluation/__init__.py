"""Batched prediction, metrics, evaluation reports and the challenge (loaded on first use)."""
from .._lazy import lazy_getattr

_EXPORTS = {"Estimate": ".metrics", "accuracy": ".metrics", "bg_gap": ".metrics", "mcnemar": ".metrics",
            "paired_difference": ".metrics", "wilson_interval": ".metrics", "Predictions": ".predict",
            "predict_items": ".predict", "EvalReport": ".results", "EvalConfig": ".config"}
__all__ = list(_EXPORTS)
__getattr__ = lazy_getattr(__name__, _EXPORTS)
