"""The background-hijack matrix of a --full Backgrounds Challenge run (pure numpy).

H[a, b] is the share of the foregrounds of class a that some background of class b turns into
class b: a background of class b "hijacks" a foreground of class a when their composite is
predicted b. It splits the paper's class fool rate (the share of all non-b foregrounds turned
into b by a class-b background) by the foreground's class: that rate is the foreground-weighted
mean of column b off the diagonal. The diagonal (a background of the foreground's own class
"turning" it into its own class) is no hijack and is left out (NaN), as are classes with no
foreground (rows) or no background (columns).
"""
from __future__ import annotations

import numpy as np


def hijack_matrix(matrix: np.ndarray, fg_labels: np.ndarray, bg_labels: np.ndarray, num_classes: int) -> np.ndarray:
    """(num_classes, num_classes) shares; matrix: predictions, foregrounds x backgrounds
    (a class outside 0..num_classes-1, such as 255 for 'no class', never hijacks)."""
    out = np.full((num_classes, num_classes), np.nan)
    for b in range(num_classes):
        cols = bg_labels == b
        if not cols.any():
            continue
        turned = (matrix[:, cols] == b).any(axis=1)
        for a in range(num_classes):
            rows = fg_labels == a
            if a != b and rows.any():
                out[a, b] = float(turned[rows].mean())
    return out


def labels_in_layout_order(labels) -> np.ndarray:
    """The label of each row (or column) of a --full matrix from the stored labels alone.

    The matrix's rows follow the dataset's scan, class by class in label order (and its columns
    likewise), so whatever the order within a class, the sorted labels are each row's label:
    enough for the hijack matrix, which only aggregates by class.
    """
    return np.sort(np.asarray(labels, dtype=np.int64), kind="stable")
