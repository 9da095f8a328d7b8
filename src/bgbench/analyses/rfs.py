"""Relative foreground sensitivity (RIVAL10), a pure function of two accuracies."""
from __future__ import annotations


def relative_foreground_sensitivity(acc_fg_noise: float, acc_bg_noise: float) -> float:
    """RFS = (acc_bg - acc_fg) / (2 min(a, 1 - a)), a = (acc_fg + acc_bg) / 2; 0 when a is 0 or 1.

    Positive: noise on the foreground hurts more than noise on the background (the model looks
    at the object). It lies in [-1, 1].
    """
    a = (acc_fg_noise + acc_bg_noise) / 2
    denom = 2 * min(a, 1 - a)
    if denom <= 0:
        return 0.0
    return (acc_bg_noise - acc_fg_noise) / denom
