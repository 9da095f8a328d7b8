"""Analyses of the full foreground x background prediction matrix (`--full`): pure numpy functions."""
from __future__ import annotations

import numpy as np

UNMAPPED = 255  # a -1 prediction (no IN-9 class) in the uint8 prediction matrix


def attack_success_rates(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray) -> np.ndarray:
    """ASR of each background b of class c: share of foregrounds of other classes predicted c."""
    asr = np.zeros(len(bg_labels))
    for c in np.unique(bg_labels):
        cols = bg_labels == c
        rows = fg_labels != c
        if rows.any():
            asr[cols] = (matrix[np.ix_(rows, cols)] == c).mean(axis=0)
    return asr


def class_fool_rates(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray,
                     num_classes: int) -> np.ndarray:
    """For class c: share of non-c foregrounds predicted c with at least one class-c background."""
    rates = np.full(num_classes, np.nan)
    for c in range(num_classes):
        rows = fg_labels != c
        cols = bg_labels == c
        if rows.any() and cols.any():
            rates[c] = (matrix[np.ix_(rows, cols)] == c).any(axis=1).mean()
    return rates


def verdicts_from_matrix(matrix: np.ndarray, fg_labels: np.ndarray) -> np.ndarray:
    """fooled[i] = any background predicted != y_i (255, unmapped, is never a label)."""
    return (matrix != fg_labels[:, None].astype(matrix.dtype)).any(axis=1)
