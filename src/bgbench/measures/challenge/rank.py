"""Ranking backgrounds by attack success rate: numpy only, so the report can use it without torch."""
from __future__ import annotations

from typing import Dict, List

import numpy as np


def top_backgrounds(asr: np.ndarray, bg_labels: np.ndarray, k: int = 5) -> Dict[int, List[int]]:
    """Indices of the k highest-ASR backgrounds of each class (ties by index)."""
    out = {}
    for c in np.unique(bg_labels):
        idx = np.nonzero(bg_labels == c)[0]
        order = idx[np.lexsort((idx, -asr[idx]))]
        out[int(c)] = order[:k].tolist()
    return out
