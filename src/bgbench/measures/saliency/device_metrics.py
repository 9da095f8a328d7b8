"""RIVAL10's alignment measures of a whole batch of maps, computed where the maps lie (a card).

`metrics` computes each measure of one map in NumPy, its definition as RIVAL10's code has it, and
is what the probe runs on the CPU. On a GPU, the same per-image work on the host (two min-max
passes, a resize, a sort and a dozen reductions over 50,176 pixels: 2.3 ms an image on one core)
left the card waiting, so this computes every measure of N maps at once in torch: the same
formulas and edge cases, sums in float64 as there, one batched sort for the coverage and the AP.
The two agree to float rounding (a pixel on a threshold can fall either side of it when the maps
differ in their last bits, as a card's gradients already do); `tests/measures/test_saliency.py`
holds this to `metrics` and the probe to RIVAL10's formulas on pytorch-grad-cam's maps.

No files, no store: tensors in, a (N, len(METRICS)) float64 tensor out, NaN where a measure is
undefined (`metrics`' rules).
"""
from __future__ import annotations

import torch

from .metrics import BINARIZE_AT, COVERAGE_AT, EPS, METRICS


def alignment_batch(g: torch.Tensor, m: torch.Tensor, absolute_iou: bool = False,
                    empty_is_nan: bool = False) -> torch.Tensor:
    """Every measure of N maps g (N, H, W) float32 >= 0 against their masks m (N, H, W) bool, in
    METRICS order: `metrics.saliency_alignment` of each. `absolute_iou`: IoU and Dice of the map
    binarized at 0.5 itself (Hard ImageNet's `absolute_iou_and_dice`); `empty_is_nan`: an image
    whose mask is empty gets NaN for every measure (Hard ImageNet's loader leaves it out)."""
    n = g.shape[0]
    g = torch.nan_to_num(g.float(), nan=0.0).flatten(1)
    obj = m.flatten(1)
    mf = obj.to(torch.float64)
    g64 = g.to(torch.float64)
    total = g64.sum(1)
    on_obj = (g64 * mf).sum(1)
    area, pixels = mf.sum(1), g.shape[1]
    precision = torch.where(total > 0, on_obj / total.where(total > 0, 1.0), torch.nan)

    if absolute_iou:
        on = g >= BINARIZE_AT
    else:
        peak = g.amax(1, keepdim=True)
        on = torch.where(peak > 0, (g / peak.where(peak > 0, 1.0)) >= BINARIZE_AT, g > 0)
    inter = (on & obj).sum(1).to(torch.float64)
    union = (on | obj).sum(1).to(torch.float64)
    iou, dice = (inter + EPS) / (union + EPS), (2 * inter + EPS) / (union + inter + EPS)

    outside = pixels - area
    density = torch.where((area > 0) & (outside > 0),
                          on_obj / area.clamp_min(1) - (total - on_obj) / outside.clamp_min(1), torch.nan)
    # (total - on_obj is Σ g·(1 − m): the same sum, taken apart once)

    sals, order = torch.sort(g, dim=1)  # ascending, as RIVAL10's thresholds read them
    inside = torch.gather(obj, 1, order)
    coverage = _coverage(g, obj, sals, area)
    ap = _average_precision_ascending(sals, inside)
    out = torch.stack([precision, iou, dice, density, *coverage.unbind(1), ap], dim=1)
    if empty_is_nan:
        out = torch.where((area > 0)[:, None], out, torch.nan)
    assert out.shape == (n, len(METRICS))
    return out


def _coverage(g: torch.Tensor, obj: torch.Tensor, sals: torch.Tensor, area: torch.Tensor) -> torch.Tensor:
    """(N, len(COVERAGE_AT)) `metrics.mask_coverage`: each t's threshold is the sorted value at
    which the running sum first exceeds t·Σg (compared in float64), 1 when Σg = 0; the pixels at
    or above it (and above 0), as a share of the mask (NaN for an empty mask). The running sum is
    torch's cumsum of the float32 values, which rounds otherwise than RIVAL10's float32 loop (on the
    CPU it accumulates in float64, on a card it is a parallel scan): a threshold can move by one
    pixel where two partial sums straddle a milestone."""
    total = sals.sum(1)  # float32, as `saliency_thresholds`' np.sum
    running = torch.cumsum(sals, dim=1).to(torch.float64)
    total64 = total.to(torch.float64)
    goals = torch.stack([total64 * float(t) for t in COVERAGE_AT], dim=1)  # no host tensor to copy up
    first = torch.searchsorted(running, goals, right=True).clamp_max_(sals.shape[1] - 1)
    thresh = torch.gather(sals, 1, first)
    thresh = torch.where((total == 0)[:, None], torch.ones_like(thresh), thresh)
    kept = (g[:, None, :] >= thresh[:, :, None]) & (g > 0)[:, None, :] & obj[:, None, :]
    covered = kept.sum(2).to(torch.float64)
    return torch.where((area > 0)[:, None], covered / area.clamp_min(1)[:, None], torch.nan)


def _average_precision_ascending(s: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(N,) `metrics._average_precision_ascending` of scores sorted ascending with their labels:
    sklearn's AP, Σ over runs of equal scores (highest first) of the recall gained times the
    precision at the run's end. Each positive adds 1/P times the precision at the end of its run:
    a run's end is found by a reverse running minimum of the ends' positions. NaN without a positive."""
    s, y = s.flip(1), y.flip(1)  # highest first
    width = s.shape[1]
    position = torch.arange(width, device=s.device).expand_as(s)
    is_end = torch.ones_like(y)
    is_end[:, :-1] = s[:, 1:] != s[:, :-1]
    ends = torch.where(is_end, position, width)
    run_end = torch.cummin(ends.flip(1), dim=1).values.flip(1)  # the end of each value's run
    tps = torch.cumsum(y, dim=1, dtype=torch.int64)
    precision_at_end = torch.gather(tps, 1, run_end).to(torch.float64) / (run_end + 1).to(torch.float64)
    positives = tps[:, -1].to(torch.float64)
    summed = (precision_at_end * y).sum(1)
    return torch.where(positives > 0, summed / positives.clamp_min(1), torch.nan)
