"""Salient ImageNet's noise sensitivity, pure: per class, the accuracy on its images clean and with
Gaussian noise on its core regions or on its spurious regions, and the means over classes.

As the repository's notebooks compute it (`evaluate_sensitivity_core_features.ipynb` and
`evaluate_sensitivity_spurious_features.ipynb`, through `inspection_utils.py`'s
`compute_noisy_acc`): for each class with core features, its images of those features clean and
with noise on their core masks: `clean_accuracy` and `spurious_accuracy` (what is left to the model
once the core is corrupted); for each class with spurious features, the same with noise on the
spurious masks: `clean_accuracy` and `core_accuracy`. An accuracy is the share of the class's
images whose argmax over the 1000 outputs is the class. The notebooks write one row per class; the
means over classes here are the numbers a row of their CSVs averages to, with a seeded percentile
bootstrap over classes (the notebooks give none). The drop is clean minus noisy accuracy, per class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

import numpy as np

from ...evaluation.metrics import bootstrap_mean, REPLICATES
from ..result import Summary, estimate_row

#: Where the noise goes, and what the notebooks call the accuracy left: noise on the core regions
#: leaves the spurious accuracy, noise on the spurious regions the core accuracy.
CORE, SPURIOUS = "core", "spurious"
LEFT = {CORE: "spurious_accuracy", SPURIOUS: "core_accuracy"}


@dataclass(kw_only=True)
class SalientSummary(Summary):
    """Per noise target ('core', 'spurious'): the mean clean and noisy accuracies and drop over its
    classes, and each class's row."""

    noise_std: float
    sets: Dict[str, dict] = field(default_factory=dict)

    def document(self) -> Dict[str, Any]:
        return {"noise_std": self.noise_std, "noise_on": self.sets}

    def metrics(self) -> List[tuple]:
        rows = []
        for target, s in self.sets.items():
            left = "salient_" + LEFT[target]
            rows += [estimate_row(left, "", s["noisy"]), estimate_row("salient_clean_accuracy", target, s["clean"]),
                     estimate_row("salient_accuracy_drop", target, s["drop"])]
        return rows

    def lines(self) -> List[str]:
        lines = [f"Salient ImageNet{self.of_run()}: Gaussian noise, std {self.noise_std:g}, on core or on spurious "
                 f"regions (inspection_utils.py's compute_noisy_acc)",
                 f"{'noise on':<10}{'classes':>8}{'images':>8}  {'clean':>7}  {'noisy':>7}  {'drop':>7}  95% CI of noisy"]
        for target, s in self.sets.items():
            n = s["noisy"]
            lines.append(f"{target:<10}{s['classes']:>8}{s['images']:>8}  {s['clean']['value']:>7.1%}  "
                         f"{n['value']:>7.1%}  {s['drop']['value']:>+7.1%}  [{n['lo']:.1%}, {n['hi']:.1%}]  "
                         f"({LEFT[target].replace('_', ' ')})")
        return lines


def _mean(values: np.ndarray, seed: int, replicates: int) -> dict:
    """The mean of per-class values with a seeded 95% percentile bootstrap over the classes."""
    return bootstrap_mean(values, replicates, seed).as_dict()


def summarize_salient(rows: Sequence[Any], classes: Sequence[str], indices: Sequence[int], noise_std: float,
                      seed: int = 0, replicates: int = REPLICATES) -> SalientSummary:
    """The summary of a run's rows (`probe.SalientRow`: noise_on, image_id, label, clean_pred,
    noisy_pred), each label a position in `classes` whose ImageNet indices are `indices`."""
    sets = {}
    for target in (CORE, SPURIOUS):
        mine = [r for r in rows if r.noise_on == target]
        per_class = []
        for label in sorted({int(r.label) for r in mine}):
            of = [r for r in mine if int(r.label) == label]
            clean = float(np.mean([r.clean_pred == indices[label] for r in of]))
            noisy = float(np.mean([r.noisy_pred == indices[label] for r in of]))
            per_class.append({"wnid": classes[label], "index": int(indices[label]), "images": len(of),
                              "clean_accuracy": clean, LEFT[target]: noisy, "drop": clean - noisy})
        clean = np.array([c["clean_accuracy"] for c in per_class], float)
        noisy = np.array([c[LEFT[target]] for c in per_class], float)
        sets[target] = {"classes": len(per_class), "images": len(mine), "clean": _mean(clean, seed, replicates),
                        "noisy": _mean(noisy, seed, replicates), "drop": _mean(clean - noisy, seed, replicates),
                        "per_class": per_class}
    return SalientSummary(noise_std=float(noise_std), sets=sets)
