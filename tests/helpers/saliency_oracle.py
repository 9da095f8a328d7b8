"""RIVAL10's saliency measures written out independently of bgbench (the oracle), a 64-px
Synthetic-9 fixture, and the check of bgbench's Grad-CAM against pytorch-grad-cam's; shared by the
saliency tests and the foundation-model tests."""
import math
import warnings
import numpy as np
import pytest
import torch
from bgbench.probing.gradcam import gradcam_batch
from bgbench.measures.saliency.metrics import METRICS


def rival10_binarize(a):
    a = np.array(a, dtype=np.float32)
    a[np.isnan(a)] = 0
    if np.max(a) != 0:
        a = a / np.max(a)
    a[a > 0.5] = 1
    a[a < 0.5] = 0  # exactly 0.5 stays 0.5, which is > 0 below
    return a


def rival10_thresholds(gcam, fractions=(0.25, 0.5, 0.75)):
    """One new pixel per loop turn, ascending; a milestone is passed when the running sum exceeds it."""
    values = np.sort(gcam.flatten())
    total = np.sum(values)
    if total == 0:
        return [1] * len(fractions)
    out, running, i = [], 0, 0
    goals = [t * total for t in fractions]
    while len(out) < len(goals):
        running += values[i]
        if running > goals[len(out)]:
            out.append(values[i])
        i += 1
    return out


def rival10_measures(gcam, mask):
    """precision, IoU, Dice, delta density, coverage at 0.25/0.5/0.75 and AP of one map."""
    from sklearn.metrics import average_precision_score
    gcam = np.array(gcam, dtype=np.float32)
    gcam[np.isnan(gcam)] = 0
    mask = (np.asarray(mask) > 0).astype(np.float32)
    bm, bg = rival10_binarize(mask), rival10_binarize(gcam)
    inter = np.sum(bm * bg > 0)
    union = np.sum(bm + bg > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.sum(gcam * mask) / np.sum(gcam)
    coverage = []
    for thresh in rival10_thresholds(gcam):
        kept = gcam.copy()
        kept[kept < thresh] = 0
        kept[kept > 0] = 1
        coverage.append(np.sum(kept * mask) / np.sum(mask))
    density = np.sum(gcam * mask) / np.sum(mask) - np.sum(gcam * (1 - mask)) / np.sum(1 - mask)
    return {"precision": float(precision), "iou": float((inter + 1e-10) / (union + 1e-10)),
            "dice": float((2 * inter + 1e-10) / (union + inter + 1e-10)), "density_diff": float(density),
            "coverage_25": float(coverage[0]), "coverage_50": float(coverage[1]), "coverage_75": float(coverage[2]),
            "ap": float(average_precision_score(mask.flatten(), gcam.flatten()))}


@pytest.fixture(scope="module")
def synth64(tmp_path_factory):
    """9 images at 64 px: feature maps of 2x2 (a ResNet's last stage) up to 8x8."""
    from bgbench.variants.synth import write_dataset
    root = tmp_path_factory.mktemp("synth64")
    write_dataset(root, per_class=1, size=64, seed=1, split="val", progress=False)
    return root


THRESHOLDED = {"iou", "dice", "coverage_25", "coverage_50", "coverage_75"}


def check_against_grad_cam(model, layer, root, rows, reshape=None, flat_at_most=0.5):
    """bgbench's per-image rows against RIVAL10's formulas on pytorch-grad-cam's maps, computed
    here on the same batch of images bgbench ran (grad-cam's own maps move by ~1e-6 between a
    batch and single images, as any float32 sum does with its order)."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    from bgbench.data.images import decode_image, read_mask
    from bgbench.data.resolve import resolve_layout
    pairs = resolve_layout(root, ["original"]).foregrounds()
    x = torch.from_numpy(np.stack([decode_image(it.path) for it, _ in pairs])).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        preds = model(x).argmax(1)
    ref = GradCAM(model=model, target_layers=[layer], reshape_transform=reshape)(
        input_tensor=x, targets=[ClassifierOutputTarget(int(p)) for p in preds])
    ours, _ = gradcam_batch(model, layer, x)  # only to tell a float tie at a threshold from an error
    assert np.abs(ours - ref).max() < 1e-5  # the maps are pytorch-grad-cam's
    got = {r.image_id: tuple(r) for r in rows}
    assert len(got) == len(pairs)
    flat = ties = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, (item, mask_path) in enumerate(pairs):
            mask = read_mask(mask_path)
            want = rival10_measures(ref[k], mask)
            row = got[item.image_id]
            assert row[2] == int(preds[k]), item.image_id
            values = dict(zip(METRICS, row[3:]))
            flat += math.isnan(want["precision"])
            for m in METRICS:
                if math.isnan(want[m]):  # the precision of an all-zero map
                    assert values[m] is None, (item.image_id, m)
                elif values[m] != pytest.approx(want[m], abs=1e-3):
                    # only a thresholded measure, only where the two maps (< 1e-5 apart) straddle
                    # its threshold: the same formulas on bgbench's map give bgbench's value
                    assert m in THRESHOLDED, (item.image_id, m, values[m], want[m])
                    assert values[m] == pytest.approx(rival10_measures(ours[k], mask)[m], abs=1e-6)
                    ties += 1
    assert flat <= flat_at_most * len(pairs)  # enough real maps for the comparison to mean something
    assert ties <= 2 + 0.1 * len(pairs) * len(THRESHOLDED)  # ties are the exception, never the rule
