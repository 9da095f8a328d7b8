"""DFR on Waterbirds' validation split as its repository runs it, pure: the head's fit.

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
fitted one-vs-rest (`dfr.fit_standardized`); Waterbirds has two, a binary fit as in the script.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from ..errors import BgbenchError
from .config import DFR_C_GRID
from .dfr import HeadFit, fit_standardized, fold_scaler, group_codes, standardizer, worst_group_accuracy

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
    group, its final scaler fitted on `scaler_features` (the training split's); see the module
    docstring."""
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
    scores, means = {}, {}
    for c in c_grid:
        coef, intercept = fit_standardized(z_fit, y[fit], float(c), penalty, rs, n_classes)
        pred = np.argmax(z_held @ coef.T + intercept, axis=1)
        scores[float(c)] = worst_group_accuracy(pred, y[held], codes[held])
        means[float(c)] = float((pred == y[held]).mean())
    best = max(scores, key=lambda c: scores[c])  # the first of the grid on ties, as the script's argmax
    mean, scale = standardizer(train_x)
    z = (x - mean) / scale
    fits, size = [], 0
    for _ in range(retrains):
        idx = balanced(codes, rs)
        rs.shuffle(np.arange(len(train_x)))  # the script's unused draw of training images, kept for its stream
        fits.append(fit_standardized(z[idx], y[idx], best, penalty, rs, n_classes))
        size = len(idx)
    weight, bias = fold_scaler(np.mean([f[0] for f in fits], axis=0), np.mean([f[1] for f in fits], axis=0),
                               mean, scale)
    return HeadFit(weight=weight, bias=bias, c=best, scores=scores, held_out=int(len(held)), retrains=retrains,
                   fitted_on=int(size), balanced=True,
                   extra={"held_out_mean_accuracy": {str(c): m for c, m in means.items()}, "penalty": penalty,
                          "solver": "liblinear", "groups": int(len(np.unique(codes))), "protocol": PROTOCOL,
                          "scaler_images": int(len(train_x)), "tune_fitted_on": int(len(fit))})
