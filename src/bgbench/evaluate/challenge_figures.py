"""The paper's challenge figures: top-5 fooling backgrounds per class (Fig. 4), ASR histogram (Fig. 24)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np

from ..data.images import decode_image


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def top_backgrounds_grid(path: Path, top: Dict[int, List[int]], asr: np.ndarray, bg_items, classes: Sequence[str]) -> Path:
    """One row per class, its top backgrounds by ASR, each titled with its ASR."""
    plt = _pyplot()
    k = max((len(v) for v in top.values()), default=1)
    fig, axes = plt.subplots(len(top), k, figsize=(2 * k, 2.1 * len(top)), squeeze=False)
    for r, (c, idx) in enumerate(sorted(top.items())):
        for j in range(k):
            ax = axes[r][j]
            ax.axis("off")
            if j < len(idx):
                ax.imshow(decode_image(bg_items[idx[j]].path))
                ax.set_title(f"{100 * asr[idx[j]]:.0f}%", fontsize=9)
        axes[r][0].text(-0.1, 0.5, classes[c], transform=axes[r][0].transAxes, ha="right", va="center", fontsize=9)
    fig.suptitle("Most fooling backgrounds per class (share of other-class foregrounds predicted as the class)",
                 fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def asr_histogram(path: Path, asr: np.ndarray, bg_labels: np.ndarray, classes: Sequence[str]) -> Path:
    """Histogram of attack success rates over all backgrounds, one stacked series per class."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    series = [asr[bg_labels == c] for c in range(len(classes))]
    ax.hist(series, bins=np.linspace(0, 1, 21), stacked=True, label=list(classes))
    ax.set_xlabel("attack success rate")
    ax.set_ylabel("backgrounds")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
