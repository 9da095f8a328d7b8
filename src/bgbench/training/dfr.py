"""Deep Feature Reweighting (Kirichenko, Izmailov & Wilson, ICLR 2023), pure: the head's fit.

DFR keeps a trained network and refits only its last layer, on data where the spurious feature
no longer predicts the class. This module follows the paper's code (`dfr_evaluate_spurious.py`):
- the features are standardized (a `StandardScaler` fitted on all the head's data);
- the head is an L1-regularized logistic regression, scikit-learn's `liblinear` solver, one
  binary classifier per class (one-vs-rest, as liblinear did for several classes);
- the inverse regularization strength C is chosen from DFR's grid on a held-out split: the data
  is split in two halves (per group), the first half is group-balanced (every group downsampled
  to the smallest one), a head is fitted for each C and scored by its *worst-group* accuracy on
  the second half;
- the final head is fitted on the whole data with the chosen C, on `retrains` group-balanced
  subsets drawn anew, and their coefficients averaged.
`linear-probe` is the same without any balancing: one fit on all the data, C chosen by the mean
accuracy on the held-out half.

Everything is a function of (features, labels, groups, options, seed): no files, no models.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..errors import BgbenchError
from .config import DFR_C_GRID, DFR_RETRAINS

PENALTIES = {"l1": 1.0, "l2": 0.0}


@dataclass
class HeadFit:
    """A fitted head in the network's own feature space (the scaler folded in), and how it was chosen.

    Attributes:
        weight, bias: (classes, features) and (classes,): logits = features @ weight.T + bias.
        c: the chosen inverse regularization strength; scores: C -> held-out score (worst-group
            accuracy for DFR, accuracy for a linear probe); held_out: images in the held-out half.
        retrains: heads averaged; fitted_on: images per fit (after balancing).
    """

    weight: np.ndarray
    bias: np.ndarray
    c: float
    scores: Dict[float, float]
    held_out: int
    retrains: int
    fitted_on: int
    balanced: bool
    extra: dict = field(default_factory=dict)

    def provenance(self) -> dict:
        return {"c": self.c, "c_grid": list(self.scores),
                "held_out_scores": {str(c): s for c, s in self.scores.items()}, "held_out_images": self.held_out,
                "retrains": self.retrains, "images_per_fit": self.fitted_on, "group_balanced": self.balanced,
                **self.extra}


def group_codes(groups: Sequence) -> np.ndarray:
    """Integer codes of group names (in sorted order)."""
    names = sorted(set(groups))
    index = {g: i for i, g in enumerate(names)}
    return np.asarray([index[g] for g in groups], dtype=np.int64)


def balanced_subset(codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of a group-balanced subset: every group downsampled at random to the smallest
    group's size, in ascending order."""
    present = np.unique(codes)
    smallest = min(int((codes == g).sum()) for g in present)
    picked = [rng.choice(np.flatnonzero(codes == g), size=smallest, replace=False) for g in present]
    return np.sort(np.concatenate(picked))


def halves(codes: np.ndarray, rng: np.random.Generator, share: float = 0.5) -> Tuple[np.ndarray, np.ndarray]:
    """(fit, held-out) indices: each group's images shuffled and split at `share` (a group of one
    image goes to the fit half)."""
    fit, held = [], []
    for g in np.unique(codes):
        idx = rng.permutation(np.flatnonzero(codes == g))
        cut = max(1, int(round(share * len(idx))))
        fit.append(idx[:cut])
        held.append(idx[cut:])
    return np.sort(np.concatenate(fit)), np.sort(np.concatenate(held))


def fit_standardized(x: np.ndarray, y: np.ndarray, c: float, penalty: str, seed,
                     n_classes: int) -> Tuple[np.ndarray, np.ndarray]:
    """(coef (classes, features), intercept (classes,)) of liblinear logistic regressions on
    standardized features `x`, one-vs-rest over `n_classes` classes; `seed`: liblinear's
    random_state (an int, or a `numpy.random.RandomState` whose stream each binary fit draws from). A class absent from `y` gets
    a constant very low logit (it can never be predicted from these data); two classes give one
    binary classifier, read as logits (0, w.x + b)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    make = lambda: LogisticRegression(C=c, l1_ratio=PENALTIES[penalty], solver="liblinear",  # noqa: E731
                                      random_state=seed)
    present = np.unique(y)
    coef = np.zeros((n_classes, x.shape[1]))
    intercept = np.full(n_classes, -1e4)
    if len(present) == 1:
        intercept[present[0]] = 0.0
        return coef, intercept
    if len(present) == 2:
        model = make().fit(x, y)
        coef[present[1]], intercept[present[1]] = model.coef_[0], model.intercept_[0]
        intercept[present[0]] = 0.0
        return coef, intercept
    model = OneVsRestClassifier(make()).fit(x, y)
    for k, cls in enumerate(model.classes_):
        coef[cls], intercept[cls] = model.estimators_[k].coef_[0], model.estimators_[k].intercept_[0]
    return coef, intercept


def standardizer(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of a StandardScaler fitted on `x` (population std; a constant feature's scale 1,
    StandardScaler's rule)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    return mean, scale


def worst_group_accuracy(pred: np.ndarray, y: np.ndarray, codes: np.ndarray) -> float:
    return float(min((pred[codes == g] == y[codes == g]).mean() for g in np.unique(codes)))


def fit_head(features: np.ndarray, labels: np.ndarray, groups: Sequence, n_classes: int, *,
             balance: bool = True, c_grid: Sequence[float] = DFR_C_GRID, penalty: str = "l1",
             retrains: int = DFR_RETRAINS, held_out: float = 0.5, seed: int = 0) -> HeadFit:
    """DFR (`balance=True`) or a linear probe (`balance=False`) on penultimate `features` (N, D),
    with `labels` (N,) and each image's group; see the module docstring."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    codes = group_codes(groups) if balance else np.zeros(len(y), dtype=np.int64)
    mean, scale = standardizer(x)
    z = (x - mean) / scale
    rng = np.random.default_rng(seed)
    fit_idx, held_idx = halves(codes if balance else group_codes(y), rng, 1 - held_out)
    if balance:
        fit_idx = fit_idx[balanced_subset(codes[fit_idx], rng)]
    if len(held_idx) == 0:
        raise BgbenchError(f"{len(y)} images are too few to hold out a share for choosing C: give more images, or "
                           f"--c-grid with one value")
    scores, means = {}, {}
    for c in c_grid:
        coef, intercept = fit_standardized(z[fit_idx], y[fit_idx], float(c), penalty, seed, n_classes)
        pred = np.argmax(z[held_idx] @ coef.T + intercept, axis=1)
        accuracy = float((pred == y[held_idx]).mean())
        scores[float(c)] = worst_group_accuracy(pred, y[held_idx], codes[held_idx]) if balance else accuracy
        means[float(c)] = accuracy
    # ties (small groups make the worst one 0 for every C): the higher mean accuracy, then the first C in the grid
    best = max(scores, key=lambda c: (scores[c], means[c]))
    subsets = _final_subsets(codes, balance, retrains, rng)
    fits = [fit_standardized(z[idx], y[idx], best, penalty, seed, n_classes) for idx in subsets]
    coef = np.mean([f[0] for f in fits], axis=0)
    intercept = np.mean([f[1] for f in fits], axis=0)
    weight, bias = fold_scaler(coef, intercept, mean, scale)
    return HeadFit(weight=weight, bias=bias, c=best, scores=scores, held_out=int(len(held_idx)),
                   retrains=len(subsets), fitted_on=int(len(subsets[0])), balanced=balance,
                   extra={"held_out_mean_accuracy": {str(c): m for c, m in means.items()}, "penalty": penalty,
                          "solver": "liblinear one-vs-rest", "groups": int(len(np.unique(codes)))})


def _final_subsets(codes: np.ndarray, balance: bool, retrains: int, rng: np.random.Generator) -> List[np.ndarray]:
    """The index sets the final heads are fitted on: all images once without balancing, or when
    every group is already as large as the smallest (balancing drops nothing: the fits would be
    identical); else `retrains` balanced subsets."""
    everything = np.arange(len(codes))
    if not balance or len(set(np.bincount(codes)[np.unique(codes)])) == 1:
        return [everything]
    return [balanced_subset(codes, rng) for _ in range(retrains)]


def fold_scaler(coef: np.ndarray, intercept: np.ndarray, mean: np.ndarray, scale: np.ndarray
                ) -> Tuple[np.ndarray, np.ndarray]:
    """The head on raw features equal to `coef`, `intercept` on standardized ones:
    w.((x - m) / s) + b = (w / s).x + (b - w.(m / s))."""
    weight = coef / scale
    return weight, intercept - coef @ (mean / scale)


def predict(weight: np.ndarray, bias: np.ndarray, features: np.ndarray) -> np.ndarray:
    return np.argmax(np.asarray(features, dtype=np.float64) @ weight.T + bias, axis=1)


def head_fit_summary(fit: HeadFit) -> str:
    """One line: each C's held-out score and the C kept; a grid that ties says so, and what broke the
    tie (the held-out mean accuracy, else the grid's order), rather than calling one C 'chosen'."""
    what = "worst-group accuracy" if fit.balanced else "accuracy"
    values = set(fit.scores.values())
    if len(fit.scores) > 1 and len(values) == 1:
        means = fit.extra.get("held_out_mean_accuracy") or {}
        by_mean = len(set(means.values())) > 1
        why = (f"the best held-out mean accuracy, {100 * means[str(fit.c)]:.1f}%" if by_mean
               else "the first of the grid: the held-out images cannot tell the Cs apart")
        low = (" (too few held-out images per group, or features that do not separate them): the choice of C is "
               "a guess; more held-out images per group (a larger --held-out share or dataset) make it one"
               if values == {0.0} else "")
        return (f"every C ties at {100 * values.pop():.1f}% held-out {what} ({fit.held_out} images){low}; "
                f"C={fit.c:g} kept, {why}")
    scores = ", ".join(f"C={c:g}: {100 * s:.1f}%" for c, s in fit.scores.items())
    return f"held-out {what} ({fit.held_out} images): {scores}; chosen C={fit.c:g}"


