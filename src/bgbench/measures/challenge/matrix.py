"""Analyses of the full foreground x background prediction matrix (`--full`): pure numpy functions, so
that the report can use them without torch.

The background-hijack matrix (`hijack_matrix`):
H[a, b] is the share of the foregrounds of class a that some background of class b turns into
class b: a background of class b "hijacks" a foreground of class a when their composite is
predicted b. It splits the paper's class fool rate (the share of all non-b foregrounds turned
into b by a class-b background) by the foreground's class: that rate is the foreground-weighted
mean of column b off the diagonal. The diagonal (a background of the foreground's own class
"turning" it into its own class) is no hijack and is left out (NaN), as are classes with no
foreground (rows) or no background (columns).
"""
from __future__ import annotations

from typing import Dict, List

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


def _turned(matrix: np.ndarray, bg_labels: np.ndarray, c: int) -> np.ndarray:
    """Per foreground: whether some class-c background makes its composite predicted c."""
    return (matrix[:, bg_labels == c] == c).any(axis=1)


def class_fool_rates(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray,
                     num_classes: int) -> np.ndarray:
    """For class c: share of non-c foregrounds predicted c with at least one class-c background."""
    rates = np.full(num_classes, np.nan)
    for c in range(num_classes):
        if (fg_labels != c).any() and (bg_labels == c).any():
            rates[c] = _turned(matrix, bg_labels, c)[fg_labels != c].mean()
    return rates


def verdicts_from_matrix(matrix: np.ndarray, fg_labels: np.ndarray) -> np.ndarray:
    """fooled[i] = any background predicted != y_i (255, unmapped, is never a label)."""
    return (matrix != fg_labels[:, None].astype(matrix.dtype)).any(axis=1)


def top_backgrounds(asr: np.ndarray, bg_labels: np.ndarray, k: int = 5) -> Dict[int, List[int]]:
    """Indices of the k highest-ASR backgrounds of each class (ties by index)."""
    out = {}
    for c in np.unique(bg_labels):
        idx = np.nonzero(bg_labels == c)[0]
        out[int(c)] = idx[np.argsort(-asr[idx], kind="stable")][:k].tolist()  # idx ascends: ties by index
    return out


def hijack_matrix(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray, num_classes: int) -> np.ndarray:
    """(num_classes, num_classes) shares; matrix: predictions, foregrounds x backgrounds
    (a class outside 0..num_classes-1, such as 255 for 'no class', never hijacks)."""
    out = np.full((num_classes, num_classes), np.nan)
    for b in range(num_classes):
        if not (bg_labels == b).any():
            continue
        turned = _turned(matrix, bg_labels, b)
        for a in range(num_classes):
            if a != b and (fg_labels == a).any():
                out[a, b] = float(turned[fg_labels == a].mean())
    return out


def labels_in_layout_order(labels) -> np.ndarray:
    """The label of each row (or column) of a --full matrix from the stored labels alone.

    The matrix's rows follow the dataset's scan, class by class in label order (and its columns
    likewise), so whatever the order within a class, the sorted labels are each row's label:
    enough for the hijack matrix, which only aggregates by class.
    """
    return np.sort(np.asarray(labels, dtype=np.int64), kind="stable")
