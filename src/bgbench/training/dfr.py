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
    return np.unique(np.asarray(groups), return_inverse=True)[1].astype(np.int64)


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
    random_state (an int, or a `numpy.random.RandomState` whose stream each binary fit draws from). A
    class absent from `y` gets a constant very low logit (it can never be predicted from these data);
    two classes give one binary classifier, read as logits (0, w.x + b)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    make = lambda: LogisticRegression(C=c, l1_ratio=PENALTIES[penalty], solver="liblinear",  # noqa: E731
                                      random_state=seed)
    present = np.unique(y)
    coef = np.zeros((n_classes, x.shape[1]))
    intercept = np.full(n_classes, -1e4)
    if len(present) > 2:
        model = OneVsRestClassifier(make()).fit(x, y)
        fits = zip(model.classes_, model.estimators_)
    else:  # one class: a constant; two: one binary classifier, the first class's logit 0
        fits = [(present[1], make().fit(x, y))] if len(present) == 2 else []
        intercept[present[0]] = 0.0
    for cls, fitted in fits:
        coef[cls], intercept[cls] = fitted.coef_[0], fitted.intercept_[0]
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
    scores, means = _grid_scores(z[fit_idx], y[fit_idx], z[held_idx], y[held_idx], codes[held_idx], c_grid, penalty,
                                 seed, n_classes, worst=balance)
    # ties (small groups make the worst one 0 for every C): the higher mean accuracy, then the first C in the grid
    best = max(scores, key=lambda c: (scores[c], means[c]))
    # the final heads: fitted on all images once without balancing, or when every group is already as large
    # as the smallest (balancing drops nothing: the fits would be identical); else on `retrains` balanced subsets
    subsets = ([np.arange(len(codes))] if not balance or len(set(np.bincount(codes)[np.unique(codes)])) == 1
               else [balanced_subset(codes, rng) for _ in range(retrains)])
    weight, bias = fold_scaler([fit_standardized(z[idx], y[idx], best, penalty, seed, n_classes) for idx in subsets],
                               mean, scale)
    return HeadFit(weight=weight, bias=bias, c=best, scores=scores, held_out=int(len(held_idx)),
                   retrains=len(subsets), fitted_on=int(len(subsets[0])), balanced=balance,
                   extra={"held_out_mean_accuracy": {str(c): m for c, m in means.items()}, "penalty": penalty,
                          "solver": "liblinear one-vs-rest", "groups": int(len(np.unique(codes)))})


def _grid_scores(z_fit, y_fit, z_held, y_held, held_codes, c_grid, penalty, seed, n_classes, worst: bool = True):
    """(C -> held-out score: worst-group accuracy, else accuracy; C -> held-out accuracy) of a head
    fitted for each C of the grid, in its order (`seed`'s stream, if a RandomState, drawn in it)."""
    scores, means = {}, {}
    for c in c_grid:
        coef, intercept = fit_standardized(z_fit, y_fit, float(c), penalty, seed, n_classes)
        pred = np.argmax(z_held @ coef.T + intercept, axis=1)
        means[float(c)] = float((pred == y_held).mean())
        scores[float(c)] = worst_group_accuracy(pred, y_held, held_codes) if worst else means[float(c)]
    return scores, means


def fold_scaler(fits: Sequence[Tuple[np.ndarray, np.ndarray]], mean: np.ndarray, scale: np.ndarray
                ) -> Tuple[np.ndarray, np.ndarray]:
    """The head on raw features equal to the mean of `fits` (coef, intercept) on standardized ones:
    w.((x - m) / s) + b = (w / s).x + (b - w.(m / s))."""
    coef, intercept = np.mean([f[0] for f in fits], axis=0), np.mean([f[1] for f in fits], axis=0)
    return coef / scale, intercept - coef @ (mean / scale)


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


#: The heads `dfr_on_validation_eval` averages (its `num_retrains` default).
REPO_RETRAINS = 20
PROTOCOL = ("dfr_evaluate_spurious.py's DFR on the validation split (deep_feature_reweighting: "
            "dfr_on_validation_tune, dfr_on_validation_eval)")


def balanced(codes: np.ndarray, rs: np.random.RandomState) -> np.ndarray:
    """Indices of a group-balanced subset as the script takes it: each group's images (groups in
    code order) shuffled in place by `rs` and cut to the smallest group's size, one group after
    another."""
    members: List[np.ndarray] = [np.where(codes == g)[0] for g in range(int(codes.max()) + 1)]
    smallest = min(len(m) for m in members)
    for m in members:
        rs.shuffle(m)
    return np.concatenate([m[:smallest] for m in members])


def fit_head_as_repo(features: np.ndarray, labels: np.ndarray, groups: Sequence, n_classes: int,
                     scaler_features: np.ndarray, *, c_grid: Sequence[float] = DFR_C_GRID, penalty: str = "l1",
                     retrains: int = REPO_RETRAINS, seed: int = 0) -> HeadFit:
    """The head DFR's script fits on validation `features` (N, D) with `labels` and each image's
    group, its final scaler fitted on `scaler_features` (the training split's): DFR on Waterbirds'
    validation split as its repository runs it.

    PolinaKirichenko/deep_feature_reweighting, `dfr_evaluate_spurious.py`: `dfr_on_validation_tune`
    and `dfr_on_validation_eval` under the script's defaults (`--balance_dfr_val`, `--notrain_dfr_val`:
    balanced validation data, no training data added).

    Choosing C (one pass: the tune's `num_retrains=1`):
    - the validation images are shuffled and cut in two, the first `n // 2` held out and the rest
      fitted on (a cut of the whole split, not per group);
    - the fitted half is group-balanced: each group shuffled and cut to the smallest group's size;
    - a StandardScaler is fitted on that balanced half and applied to the held-out half;
    - for each C of the grid (`C_OPTIONS`), an L1 liblinear logistic regression with class weights
      1:1 (the one option when balanced data has no training data added) is fitted and scored by its
      worst-group accuracy on the held-out half; the first C of the grid with the best score is kept.
    The head (`num_retrains=20`): a StandardScaler fitted on the *training split's* features; then,
    `retrains` times, the whole validation split group-balanced anew (each group shuffled and cut to
    the smallest), standardized with that scaler and fitted with the kept C; the coefficients and
    intercepts of the fits are averaged.

    The draws are the script's own: one `numpy.random.RandomState(seed)` takes every shuffle in the
    script's order (including the shuffle of the training indices each head makes, unused when no
    training data is added) and seeds every liblinear fit, as numpy's global state does in the
    script; run with `np.random.seed(seed)` first, the script draws the same subsets and fits the
    same head. Where bgbench departs, and why: a group with no image in the held-out half is left
    out of the worst group (the script takes the minimum over a NaN there, and keeps whichever C that
    NaN falls on); a fitted half with no image of some group is one line (the script would balance
    every group to zero images, or, for the last group, drop it silently). More than two classes are
    fitted one-vs-rest (`fit_standardized`); Waterbirds has two, a binary fit as in the script.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    codes = group_codes(groups)
    train_x = np.asarray(scaler_features, dtype=np.float64)
    rs = np.random.RandomState(seed)
    order = np.arange(len(y))
    rs.shuffle(order)
    held, fit = order[:len(y) // 2], order[len(y) // 2:]
    absent = sorted({groups[i] for i in range(len(y))} - {groups[i] for i in fit})
    if absent:  # the script would balance to zero images, or silently over the other groups
        raise BgbenchError(f"{len(y)} validation images are too few for DFR's script: the half it fits on holds no "
                           f"image of {absent[0]!r}; give a validation split with more images per group")
    fit = fit[balanced(codes[fit], rs)]
    mean, scale = standardizer(x[fit])
    z_fit, z_held = (x[fit] - mean) / scale, (x[held] - mean) / scale
    scores, means = _grid_scores(z_fit, y[fit], z_held, y[held], codes[held], c_grid, penalty, rs, n_classes)
    best = max(scores, key=lambda c: scores[c])  # the first of the grid on ties, as the script's argmax
    mean, scale = standardizer(train_x)
    z = (x - mean) / scale
    fits, size = [], 0
    for _ in range(retrains):
        idx = balanced(codes, rs)
        rs.shuffle(np.arange(len(train_x)))  # the script's unused draw of training images, kept for its stream
        fits.append(fit_standardized(z[idx], y[idx], best, penalty, rs, n_classes))
        size = len(idx)
    weight, bias = fold_scaler(fits, mean, scale)
    return HeadFit(weight=weight, bias=bias, c=best, scores=scores, held_out=int(len(held)), retrains=retrains,
                   fitted_on=int(size), balanced=True,
                   extra={"held_out_mean_accuracy": {str(c): m for c, m in means.items()}, "penalty": penalty,
                          "solver": "liblinear", "groups": int(len(np.unique(codes))), "protocol": PROTOCOL,
                          "scaler_images": int(len(train_x)), "tune_fitted_on": int(len(fit))})
