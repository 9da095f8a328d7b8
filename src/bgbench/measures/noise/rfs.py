"""Relative foreground sensitivity (RIVAL10), a pure function of two accuracies:
RFS = (acc_bg - acc_fg) / (2 min(a, 1 - a)), a = (acc_fg + acc_bg) / 2; 0 when a is 0 or 1. Positive:
noise on the foreground hurts more than noise on the background (the model looks at the object).
It lies in [-1, 1]."""
from __future__ import annotations

import numpy as np


def rfs_array(acc_fg_noise: np.ndarray, acc_bg_noise: np.ndarray) -> np.ndarray:
    """RFS element-wise over arrays of accuracies (e.g. every bootstrap replicate at once)."""
    fg = np.asarray(acc_fg_noise, dtype=np.float64)
    bg = np.asarray(acc_bg_noise, dtype=np.float64)
    a = (fg + bg) / 2
    denom = 2 * np.minimum(a, 1 - a)
    safe = np.where(denom > 0, denom, 1.0)
    return np.where(np.isnan(a), np.nan, np.where(denom > 0, (bg - fg) / safe, 0.0))
