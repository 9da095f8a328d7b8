"""The noise and saliency probes against oracles that do not use bgbench's own code: accuracies
and RFS worked by hand, an independent bootstrap written here, pytorch-grad-cam (the `grad-cam`
package RIVAL10 used) with RIVAL10's formulas written out below, and the CLI end to end."""
import json
import math
import sqlite3
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

from bgbench.measures.noise.probe import NoiseConfig, noise_summary
from bgbench.measures.noise.summary import summarize
from bgbench.measures.noise.engine import Region, draw_seed, noisy_predictions, region_noise, region_predictions
from bgbench.measures.saliency.probe import SaliencyConfig, gradcam_batch, probe_saliency, resolve_layer
from bgbench.probing.gradcam import default_layer
from bgbench.measures.saliency.metrics import METRICS, saliency_alignment
from bgbench.measures.saliency.overlays import choose_examples
from bgbench.measures.saliency.summary import summarize_saliency
from bgbench.errors import BgbenchError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli


def _strict_json(text):
    """json.loads that refuses NaN/Infinity, as a strict JSON reader would."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


# ----------------------------------------------------------------------------------------------
# noise: the engine

def _left_half(n=2, h=8, w=8):
    m = torch.zeros(n, 1, h, w)
    m[..., : w // 2] = 1
    return m


def test_region_noise_stays_in_its_region_and_l2_hits_the_level():
    m = _left_half()
    fg = region_noise(m, "fg", 0.5, "sigma", 3, [1, 2])
    bg = region_noise(m, "bg", 0.5, "sigma", 3, [1, 2])
    attr = region_noise(m, "attr:left", 0.5, "sigma", 3, [1, 2])  # an attribute's mask: noise on it, as fg
    assert fg.shape == (3, 2, 3, 8, 8) and torch.equal(attr, fg)
    assert (fg[..., 4:] == 0).all() and (fg[..., :4] != 0).all()
    assert (bg[..., :4] == 0).all() and (bg[..., 4:] != 0).all()
    # RIVAL10's L2 noise: the masked noise over all channels of an image scaled to norm `level`
    l2 = region_noise(m, "bg", 25.0, "l2", 3, [1, 2])
    norms = np.sqrt((l2.numpy() ** 2).reshape(3, 2, -1).sum(axis=2))
    assert norms == pytest.approx(np.full((3, 2), 25.0), rel=1e-5)


def test_each_images_noise_is_its_own_seeded_draw():
    """Image k's noise is torch.randn((trials, H, W, 3)) from a CPU generator seeded by its own
    seed, channels moved first, times sigma: the same whatever images share its batch."""
    m = torch.ones(3, 1, 4, 5)
    both = region_noise(m, "fg", 0.5, "sigma", 2, [7, 11, 7])
    alone = region_noise(m[:1], "fg", 0.5, "sigma", 2, [11])
    expected = torch.randn((2, 4, 5, 3), generator=torch.Generator().manual_seed(11)).permute(0, 3, 1, 2) * 0.5
    assert torch.equal(both[:, 1], expected) and torch.equal(alone[:, 0], expected)
    assert torch.equal(both[:, 0], both[:, 2]) and not torch.equal(both[:, 0], both[:, 1])
    # the seed names the run's seed, the image, the region and the level: change any, change the draw
    seeds = {draw_seed(0, "a/1", "fg", 0.5), draw_seed(1, "a/1", "fg", 0.5), draw_seed(0, "a/2", "fg", 0.5),
             draw_seed(0, "a/1", "bg", 0.5), draw_seed(0, "a/1", "fg", 0.25)}
    assert len(seeds) == 5 and all(0 <= s < 2 ** 63 for s in seeds)


def test_noise_rows_do_not_depend_on_the_batch_size(synth_root):
    """Per-image draws: batches of 5 and of 64 give the very same per-image rows (predictions included)."""
    from bgbench.measures.noise.probe import probe_noise
    from bgbench.models import create_model
    model = create_model("timm:test_resnet")
    rows = [sorted(probe_noise(model, synth_root, NoiseConfig(levels=[0.3, 0.6], trials=2, batch_size=b),
                               progress=False).rows) for b in (5, 64)]
    assert rows[0] == rows[1] and len(rows[0]) == 36 * 2 * 2 * 2
    assert {r[5] for r in rows[0]} == {0, 1}  # some right, some wrong: the predictions are not all alike


def test_a_model_that_reads_only_the_foreground_has_rfs_one():
    x = torch.full((2, 3, 8, 8), 0.5)
    m = _left_half()
    labels = torch.tensor([1, 1])

    def predict(batch):  # right iff the foreground (left half) is untouched
        return torch.where((batch[..., :4] - 0.5).abs().amax(dim=(1, 2, 3)) == 0, 1, 0)
    preds = noisy_predictions(predict, x, m, ["c/0", "c/1"], 0, [0.25, 0.5], trials=3, kind="sigma")
    ok = (preds == labels).numpy()
    assert ok.shape == (2, 2, 3, 2)
    assert not ok[0].any() and ok[1].all()  # fg noise: always wrong; bg noise: always right
    rows = [(f"c/{k}", 1, r, lvl, t, int(ok[ri, li, t, k])) for ri, r in enumerate(("fg", "bg"))
            for li, lvl in enumerate((0.25, 0.5)) for t in range(3) for k in range(2)]
    s = summarize(rows)
    assert {lvl: e["value"] for lvl, e in s.rfs.items()} == {0.25: 1.0, 0.5: 1.0} and s.rfs_overall == 1.0


def test_attribute_noise_goes_on_its_mask_only_and_only_on_images_that_have_it():
    x = torch.full((3, 3, 8, 8), 0.5)
    part = torch.zeros(1, 1, 8, 8)
    part[..., 6:, 6:] = 1  # image 2's attribute: the bottom-right corner
    seen = []

    def predict(batch):  # records where the noise went; right iff the top-left corner is clean
        seen.append((batch - 0.5).abs().flatten(1).gt(0))
        return torch.where((batch[..., :2, :2] - 0.5).abs().amax(dim=(1, 2, 3)) == 0, 0, 1)
    regions = [Region("attr:corner", torch.tensor([2]), part)]
    out = region_predictions(predict, x, regions, ["a", "b", "c"], 0, [0.5], trials=2, kind="sigma")
    assert out["attr:corner"].shape == (1, 2, 1) and (out["attr:corner"] == 0).all()
    touched = seen[0].view(2, 3, 8, 8)
    assert touched[..., 6:, 6:].any() and not touched[..., :6, :].any() and not touched[..., :, :6].any()


# ----------------------------------------------------------------------------------------------
# noise: accuracy per class pooled over trials, mean over classes, and RFS, by hand

# class 0 has one image (a), class 1 three (b, c, d); two trials; levels 0.5 and 1.0
_HAND = {  # (region, level): {image: trials correct}
    ("fg", 0.5): {"a": (1, 1), "b": (0, 0), "c": (1, 0), "d": (0, 0)},
    ("bg", 0.5): {"a": (1, 0), "b": (1, 1), "c": (1, 1), "d": (1, 1)},
    ("fg", 1.0): {"a": (0, 0), "b": (0, 0), "c": (0, 0), "d": (0, 0)},
    ("bg", 1.0): {"a": (1, 1), "b": (0, 0), "c": (0, 0), "d": (1, 1)},
}
_LABEL = {"a": 0, "b": 1, "c": 1, "d": 1}


def _hand_rows():
    return [(img, _LABEL[img], region, level, t, ok) for (region, level), per in _HAND.items()
            for img, oks in per.items() for t, ok in enumerate(oks)]


def test_noise_accuracy_is_the_mean_of_per_class_accuracies_pooled_over_trials():
    s = summarize(_hand_rows(), replicates=200)
    fg, bg = s.curves["fg"], s.curves["bg"]
    # level 0.5, fg: class 0 2/2 = 1, class 1 1/6 -> 7/12 (pooled over images it would be 3/8)
    assert fg[0]["acc"] == pytest.approx(7 / 12) and bg[0]["acc"] == pytest.approx((1 / 2 + 1) / 2)
    # level 1.0, fg: 0 everywhere; bg: class 0 2/2, class 1 2/6 -> 2/3
    assert fg[1]["acc"] == 0 and bg[1]["acc"] == pytest.approx(2 / 3)
    # RFS at 0.5: a = (7/12 + 9/12)/2 = 2/3, (9/12 - 7/12) / (2 * 1/3) = 1/4; at 1.0: (2/3) / (2 * 1/3) = 1
    assert s.rfs[0.5]["value"] == pytest.approx(0.25) and s.rfs[1.0]["value"] == pytest.approx(1.0)
    # overall, from the accuracies averaged over levels: fg 7/24, bg 17/24, a = 1/2 -> 10/24
    assert s.rfs_overall == pytest.approx(10 / 24)
    assert fg[0]["n"] == 4 and fg[0]["trials"] == 2 and s.classes == 2


def _bernoulli_rows(per_class, classes=3, trials=1, levels=(0.5,), seed=0, p_fg=0.4, p_bg=0.8):
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(classes):
        for k in range(per_class):
            for level in levels:
                for t in range(trials):
                    rows.append((f"{c}/{k}", c, "fg", level, t, int(rng.random() < p_fg)))
                    rows.append((f"{c}/{k}", c, "bg", level, t, int(rng.random() < p_bg)))
    return rows


def _independent_bootstrap(rows, replicates, seed):
    """A bootstrap written from the definition: resample each class's images with replacement
    (every trial and both regions of an image together), recompute the class-mean accuracy of
    each region at the single level, and its RFS; 95% percentile intervals."""
    images = {}
    for img, label, region, _, _, ok in rows:
        d = images.setdefault(img, {"label": label, "fg": [], "bg": []})
        d[region].append(ok)
    by_class = {}
    for img, d in images.items():
        by_class.setdefault(d["label"], []).append(d)
    rng = np.random.default_rng(seed + 12345)
    stats = {"fg": [], "bg": [], "rfs": []}
    for _ in range(replicates):
        acc = {"fg": [], "bg": []}
        for members in by_class.values():
            draw = [members[i] for i in rng.integers(0, len(members), len(members))]
            for region in acc:
                acc[region].append(sum(sum(d[region]) for d in draw) / sum(len(d[region]) for d in draw))
        f, b = np.mean(acc["fg"]), np.mean(acc["bg"])
        a = (f + b) / 2
        stats["fg"].append(f)
        stats["bg"].append(b)
        stats["rfs"].append(0.0 if min(a, 1 - a) == 0 else (b - f) / (2 * min(a, 1 - a)))
    return {k: np.percentile(v, [2.5, 97.5]) for k, v in stats.items()}


def test_noise_bootstrap_matches_an_independent_one_and_has_width_with_one_trial():
    rows = _bernoulli_rows(per_class=30, trials=1)
    s = summarize(rows, replicates=2000, seed=3)
    want = _independent_bootstrap(rows, 2000, seed=3)
    fg, bg, rfs = s.curves["fg"][0], s.curves["bg"][0], s.rfs[0.5]
    assert (fg["lo"], fg["hi"]) == pytest.approx(tuple(want["fg"]), abs=0.025)
    assert (bg["lo"], bg["hi"]) == pytest.approx(tuple(want["bg"]), abs=0.025)
    assert (rfs["lo"], rfs["hi"]) == pytest.approx(tuple(want["rfs"]), abs=0.05)
    assert fg["hi"] - fg["lo"] > 0.05 and rfs["hi"] - rfs["lo"] > 0.05  # one trial: still an interval
    for e, value in ((fg, fg["acc"]), (bg, bg["acc"]), (rfs, rfs["value"])):
        assert e["lo"] <= value <= e["hi"]
    assert s.rfs_overall_interval[0] <= s.rfs_overall <= s.rfs_overall_interval[1]
    assert summarize(rows, replicates=2000, seed=3).curves == s.curves  # seeded: the same again


def test_noise_interval_shrinks_like_one_over_root_n():
    small = _bernoulli_rows(per_class=20, seed=1)
    big = [(f"{img}#{copy}", *rest) for copy in range(4) for img, *rest in small]  # every image 4 times
    ws = [summarize(r, replicates=2000).curves["fg"][0] for r in (small, big)]
    width = [w["hi"] - w["lo"] for w in ws]
    assert ws[0]["acc"] == pytest.approx(ws[1]["acc"])
    assert 0.35 < width[1] / width[0] < 0.65  # 4x the images: about half the width


# ----------------------------------------------------------------------------------------------
# noise: level grids

def test_noise_grids_are_rival10s_and_hard_imagenets():
    rival_sigma = [30 / 255, 60 / 255, 90 / 255, 120 / 255, 150 / 255, 180 / 255, 210 / 255]
    assert NoiseConfig().grid == "rival10" and NoiseConfig().levels == pytest.approx(rival_sigma)
    l2 = NoiseConfig(kind="l2")
    assert l2.grid == "rival10" and l2.levels == [25.0, 50.0, 75.0, 100.0, 125.0, 150.0, 175.0, 200.0]
    assert NoiseConfig(levels="hardimagenet").levels == [0.125, 0.25, 0.375, 0.5, 0.625, 0.75]
    assert NoiseConfig(levels=["hardimagenet"], kind="l2").levels == [30.0, 60.0, 90.0, 120.0, 150.0, 180.0]
    custom = NoiseConfig(levels=["0.5", "30/255"])
    assert custom.grid == "custom" and custom.levels == pytest.approx([0.5, 30 / 255])
    spelled = NoiseConfig(levels=[f"{k}/255" for k in range(30, 211, 30)])
    assert spelled.grid == "rival10"  # the grid's own numbers are the grid
    with pytest.raises(BgbenchError, match="--levels"):
        NoiseConfig(levels=["rival11"])
    with pytest.raises(BgbenchError, match="--levels"):
        NoiseConfig(levels=[-0.5])
    with pytest.raises(BgbenchError, match="--trials"):
        NoiseConfig(trials=0)
    with pytest.raises(BgbenchError, match="--noise"):
        NoiseConfig(kind="uniform")


def test_noise_probe_cli_stores_rows_grid_and_intervals(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root, "--levels", "60/255",
                   "120/255", "--trials", "1", "--quiet", "--json", "--db", db)
    assert proc.returncode == 0, proc.stderr
    doc = _strict_json(proc.stdout)
    with Store(db) as store:
        n = store.conn.execute("SELECT COUNT(*) FROM probe_noise WHERE run_id=?", (doc["run_id"],)).fetchone()[0]
        again = noise_summary(store, doc["run_id"]).to_dict()
        run = store.get_run(doc["run_id"])
        metrics = {(m["name"], m["variant"]): m for m in store.metrics(doc["run_id"])}
    assert run["kind"] == "probe_noise" and n == 36 * 2 * 2  # images x regions x levels x 1 trial
    config = json.loads(run["config"])
    assert config["grid"] == "custom" and config["levels"] == pytest.approx([60 / 255, 120 / 255])
    assert doc["grid"]["levels"] == pytest.approx([60 / 255, 120 / 255]) and "custom" in doc["grid"]["label"]
    assert again["rfs_overall"] == pytest.approx(doc["rfs_overall"])
    assert again["rfs_overall_lo"] == pytest.approx(doc["rfs_overall_lo"])
    overall = metrics[("rfs", "")]
    assert overall["value"] == pytest.approx(doc["rfs_overall"]) and overall["lo"] < overall["hi"]
    fg = doc["curves"]["fg"][0]
    assert fg["hi"] > fg["lo"]  # one trial, yet an interval (over images)
    with Store(db) as store:  # what the CLI prints without --json
        table = noise_summary(store, doc["run_id"]).table()
    assert "grid custom σ 60/255 … 120/255 (2 levels)" in table and "RFS overall" in table
    assert_one_line_error(run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--trials", "0", "--db", db), "--trials")
    assert_one_line_error(run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--levels", "loud", "--db", db), "--levels", "loud")


# ----------------------------------------------------------------------------------------------
# saliency: RIVAL10's measures, written out here from its code (bg_fg_saliency.py, utils.py)

def _rival10_binarize(a):
    a = np.array(a, dtype=np.float32)
    a[np.isnan(a)] = 0
    if np.max(a) != 0:
        a = a / np.max(a)
    a[a > 0.5] = 1
    a[a < 0.5] = 0  # exactly 0.5 stays 0.5, which is > 0 below
    return a


def _rival10_thresholds(gcam, fractions=(0.25, 0.5, 0.75)):
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


def _rival10_measures(gcam, mask):
    """precision, IoU, Dice, delta density, coverage at 0.25/0.5/0.75 and AP of one map."""
    from sklearn.metrics import average_precision_score
    gcam = np.array(gcam, dtype=np.float32)
    gcam[np.isnan(gcam)] = 0
    mask = (np.asarray(mask) > 0).astype(np.float32)
    bm, bg = _rival10_binarize(mask), _rival10_binarize(gcam)
    inter = np.sum(bm * bg > 0)
    union = np.sum(bm + bg > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.sum(gcam * mask) / np.sum(gcam)
    coverage = []
    for thresh in _rival10_thresholds(gcam):
        kept = gcam.copy()
        kept[kept < thresh] = 0
        kept[kept > 0] = 1
        coverage.append(np.sum(kept * mask) / np.sum(mask))
    density = np.sum(gcam * mask) / np.sum(mask) - np.sum(gcam * (1 - mask)) / np.sum(1 - mask)
    return {"precision": float(precision), "iou": float((inter + 1e-10) / (union + 1e-10)),
            "dice": float((2 * inter + 1e-10) / (union + inter + 1e-10)), "density_diff": float(density),
            "coverage_25": float(coverage[0]), "coverage_50": float(coverage[1]), "coverage_75": float(coverage[2]),
            "ap": float(average_precision_score(mask.flatten(), gcam.flatten()))}


def test_saliency_measures_by_hand():
    g = np.zeros((4, 4), np.float32)
    g[0, 0], g[0, 1], g[1, 0] = 1.0, 0.5, 0.25  # on the object
    g[2, 2], g[3, 0], g[3, 3] = 0.5, 0.5, 0.25  # off it
    mask = np.zeros((4, 4), bool)
    mask[:2, :2] = True  # holds 1.0, 0.5, 0.25 and a 0
    s = saliency_alignment(g, mask)
    assert s["precision"] == pytest.approx(1.75 / 3.0)
    # on at >= 0.5 of the max: 4 px, 2 of them on the 4-px object: IoU 2/6, Dice 4/8
    assert s["iou"] == pytest.approx(1 / 3) and s["dice"] == pytest.approx(0.5)
    assert s["density_diff"] == pytest.approx(1.75 / 4 - 1.25 / 12)
    # sorted running sums 0 (x10), .25, .5, 1, 1.5, 2, 3: t=.25 passes 0.75 at a 0.5 and t=.5
    # passes 1.5 at a 0.5 (keep >= .5: 2 of the object's 4 px); t=.75 passes 2.25 at 1.0 (1 px)
    assert (s["coverage_25"], s["coverage_50"], s["coverage_75"]) == pytest.approx((0.5, 0.5, 0.25))
    # AP: thresholds 1 (P 1, R 1/4), .5 (2/4, 2/4), .25 (3/6, 3/4), 0 (4/16, 1)
    assert s["ap"] == pytest.approx(0.25 * 1 + 0.25 * 0.5 + 0.25 * 0.5 + 0.25 * 0.25)
    assert s == pytest.approx(_rival10_measures(g, mask))
    flat = saliency_alignment(np.zeros((4, 4)), mask)  # an all-zero map is kept, as RIVAL10 counts it
    assert math.isnan(flat["precision"])
    assert flat["iou"] == pytest.approx(0, abs=1e-9) and flat["dice"] == pytest.approx(0, abs=1e-9)
    assert flat["density_diff"] == 0 and flat["coverage_25"] == flat["coverage_75"] == 0
    assert flat["ap"] == pytest.approx(4 / 16)
    # one pixel with all the mass: RIVAL10's loop would run off the end; here every t keeps it
    spot = np.zeros((4, 4), np.float32)
    spot[0, 0] = 1
    assert saliency_alignment(spot, mask)["coverage_75"] == pytest.approx(1 / 4)


def test_saliency_headline_groups_by_predicted_class():
    nan = float("nan")
    values = {m: np.zeros(4) for m in METRICS}
    values["precision"] = np.array([0.2, 0.4, nan, 0.9])  # the NaN is an all-zero map
    values["iou"] = np.array([0.1, 0.2, 0.0, 0.6])
    s = summarize_saliency(values, preds=[0, 0, 0, 3], class_name=lambda i: f"c{i}", replicates=300)
    assert s.headline["precision"]["value"] == pytest.approx((0.3 + 0.9) / 2)  # class means 0.3 and 0.9
    assert s.image_mean["precision"]["value"] == pytest.approx(1.5 / 3) and s.image_mean["precision"]["n"] == 3
    assert s.headline["iou"]["value"] == pytest.approx((0.1 + 0.6) / 2)
    assert s.image_mean["iou"]["value"] == pytest.approx(0.9 / 4) and s.flat == 1
    assert s.per_class["c0"]["images"] == 3 and s.per_class["c3"]["precision"] == pytest.approx(0.9)
    for e in (s.headline["precision"], s.image_mean["precision"]):  # resamples within predicted classes
        assert 0.2 <= e["lo"] <= e["value"] <= e["hi"] <= 0.9 and e["lo"] < e["hi"]
    rows = {(name, variant): value for name, variant, value, *_ in s.metric_rows()}
    assert rows[("saliency_precision", "")] == pytest.approx(0.6)
    assert rows[("saliency_precision_image_mean", "")] == pytest.approx(0.5)
    assert rows[("saliency_flat_maps", "")] == 1


def test_overlay_examples_are_the_extremes_of_each_predicted_class():
    nan = float("nan")
    rows = [("a", 0, 0, 0.5), ("b", 0, 0, 0.9), ("c", 0, 0, 0.1), ("d", 0, 2, nan), ("e", 0, 2, 0.3)]
    picked = [(ex.image_id, ex.rank) for ex in choose_examples(rows, per_class=2)]
    assert picked == [("b", "most aligned"), ("c", "least aligned"), ("e", "most aligned"), ("d", "least aligned")]
    assert [ex.image_id for ex in choose_examples(rows, per_class=1)] == ["b", "e"]
    assert choose_examples(rows, per_class=0) == []


# ----------------------------------------------------------------------------------------------
# saliency: the whole probe against pytorch-grad-cam + RIVAL10's formulas

@pytest.fixture(scope="module")
def synth64(tmp_path_factory):
    """9 images at 64 px: feature maps of 2x2 (a ResNet's last stage) up to 8x8."""
    from bgbench.variants.synth import write_dataset
    root = tmp_path_factory.mktemp("synth64")
    write_dataset(root, per_class=1, size=64, seed=1, split="val", progress=False)
    return root


THRESHOLDED = {"iou", "dice", "coverage_25", "coverage_50", "coverage_75"}


def _check_against_grad_cam(model, layer, root, rows, reshape=None, flat_at_most=0.5):
    """bgbench's per-image rows against RIVAL10's formulas on pytorch-grad-cam's maps, computed
    here on the same batch of images bgbench ran (grad-cam's own maps move by ~1e-6 between a
    batch and single images, as any float32 sum does with its order)."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    from bgbench.data.images import decode_image, load_mask
    from bgbench.data.resolve import resolve_layout
    pairs = resolve_layout(root, ["original"]).foregrounds()
    x = torch.from_numpy(np.stack([decode_image(it.path) for it, _ in pairs])).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        preds = model(x).argmax(1)
    ref = GradCAM(model=model, target_layers=[layer], reshape_transform=reshape)(
        input_tensor=x, targets=[ClassifierOutputTarget(int(p)) for p in preds])
    ours, _ = gradcam_batch(model, layer, x)  # only to tell a float tie at a threshold from an error
    assert np.abs(ours - ref).max() < 1e-5  # the maps are pytorch-grad-cam's
    got = {r[0]: r for r in rows}
    assert len(got) == len(pairs)
    flat = ties = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, (item, mask_path) in enumerate(pairs):
            mask = load_mask(mask_path)
            want = _rival10_measures(ref[k], mask)
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
                    assert values[m] == pytest.approx(_rival10_measures(ours[k], mask)[m], abs=1e-6)
                    ties += 1
    assert flat <= flat_at_most * len(pairs)  # enough real maps for the comparison to mean something
    assert ties <= 2 + 0.1 * len(pairs) * len(THRESHOLDED)  # ties are the exception, never the rule


def _timm_model(arch, **kw):
    import timm
    torch.manual_seed(0)
    net = timm.create_model(arch, pretrained=False, num_classes=9, **kw)
    return BgModel(net, ModelSpec(name=f"timm:{arch}", arch=arch, num_classes=9)).eval()


@pytest.mark.parametrize("layer", [None, "layer2"])  # the default last stage (2x2 at 64 px), and 8x8
def test_saliency_equals_rival10_with_pytorch_grad_cam_on_a_resnet(synth64, layer):
    model = _timm_model("test_resnet")
    result = probe_saliency(model, synth64, SaliencyConfig(layer=layer, batch_size=64, examples=0),
                            progress=False)
    assert result.layer == (layer or "layer4")
    _check_against_grad_cam(model, model.net.get_submodule(result.layer), synth64, result.rows)
    # the headline is RIVAL10's: nanmean per predicted class, then the mean over those classes
    by_pred = {}
    for _, _, pred, *vals in result.rows:
        by_pred.setdefault(pred, []).append(dict(zip(METRICS, vals))["dice"])
    s = result.summary()
    assert s.headline["dice"]["value"] == pytest.approx(np.mean([np.mean(v) for v in by_pred.values()]))
    assert s.image_mean["dice"]["value"] == pytest.approx(np.mean([d for v in by_pred.values() for d in v]))


@pytest.mark.parametrize("arch,prefix", [("vit_tiny_patch16_224", 1), ("deit_tiny_distilled_patch16_224", 2)])
def test_saliency_equals_rival10_with_pytorch_grad_cam_on_a_vit(synth64, arch, prefix):
    model = _timm_model(arch, img_size=64, patch_size=8, depth=4)  # an 8x8 grid of patch tokens, 4 blocks
    assert default_layer(model.net) == "blocks.3.norm1"  # the last block's norm1

    def to_grid(t):  # RIVAL10's vit_reshape_transform, with the prefix tokens of this model
        return t[:, prefix:, :].reshape(t.size(0), 8, 8, t.size(2)).permute(0, 3, 1, 2)
    result = probe_saliency(model, synth64, SaliencyConfig(batch_size=64, examples=0), progress=False)
    _check_against_grad_cam(model, model.net.blocks[-1].norm1, synth64, result.rows, reshape=to_grid,
                            flat_at_most=0.2)


class _LooksAt(nn.Module):
    """A classifier whose features exist only inside `region` (a fixed spatial mask)."""

    def __init__(self, region: torch.Tensor):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        nn.init.constant_(self.conv.weight, 0.1)
        nn.init.constant_(self.conv.bias, 0.1)
        self.register_buffer("region", region)
        self.features = nn.Identity()
        self.fc = nn.Linear(4, 2)
        nn.init.constant_(self.fc.weight, 1.0)
        with torch.no_grad():
            self.fc.weight[1] = -1.0

    def forward(self, x):
        f = self.features(torch.relu(self.conv(x)) * self.region)
        return self.fc(f.mean(dim=(2, 3)))


@pytest.mark.parametrize("left", [True, False])
def test_gradcam_finds_the_region_a_network_looks_at(left):
    region = torch.zeros(1, 1, 16, 16)
    region[..., :8] = 1
    if not left:
        region = 1 - region
    model = BgModel(_LooksAt(region), ModelSpec(name="looks-at", arch="hand", num_classes=2, mean=(0, 0, 0),
                                                std=(1, 1, 1))).eval()
    name, layer = resolve_layer(model, "features")
    x = torch.rand(3, 3, 16, 16)
    maps, pred = gradcam_batch(model, layer, x)
    assert (pred == 0).all() and maps.min() >= 0 and maps.max() == pytest.approx(1, abs=1e-6)
    fg = np.zeros((16, 16), bool)
    fg[:, :8] = True  # the object is on the left
    s = [saliency_alignment(c, fg) for c in maps]
    want = 1.0 if left else 0.0
    assert [r["precision"] for r in s] == pytest.approx([want] * 3, abs=0.05)
    with pytest.raises(BgbenchError, match="--layer"):
        resolve_layer(model, "nope")


def test_saliency_probe_cli_writes_beside_the_store_and_records_where(synth_root, tmp_path, monkeypatch):
    db = tmp_path / "store" / "r.db"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    proc = run_cli("probe", "saliency", "--model", "timm:test_resnet", "--data", synth_root, "--quiet", "--json",
                   "--db", db, "--layer", "layer2", "--examples", "2")
    assert proc.returncode == 0, proc.stderr
    doc = _strict_json(proc.stdout)
    assert list(cwd.iterdir()) == []  # nothing in the current folder
    folders = sorted((tmp_path / "store").glob("probe_saliency_*"))
    assert len(folders) == 1 and doc["overlays"] == str(folders[0] / "saliency_overlays.png")
    assert (folders[0] / "saliency_overlays.png").stat().st_size > 1000
    with Store(db) as store:
        run = store.runs("probe_saliency")[-1]
        outputs = json.loads(run["outputs"])
        names = {r["name"] for r in store.metrics(run["id"])}
        rows = store.probe_rows("probe_saliency", run["id"])
    assert outputs["overlays"] == doc["overlays"] and outputs["folder"] == str(folders[0])
    assert {f"saliency_{m}" for m in METRICS} | {f"saliency_{m}_image_mean" for m in METRICS} <= names
    assert len(rows) == 36 and all(r["ap"] is not None and r["coverage_50"] is not None for r in rows)
    assert doc["headline"]["precision"]["value"] is not None and "predicted" in doc["aggregation"]["headline"]
    out = tmp_path / "chosen"
    again = run_cli("probe", "saliency", "--model", "timm:test_resnet", "--data", synth_root, "--quiet",
                    "--db", db, "--out", out, "--examples", "1")
    assert again.returncode == 0 and (out / "saliency_overlays.png").is_file()
    assert "headline" in again.stdout and "mean over images" in again.stdout
    assert len(list((tmp_path / "store").glob("probe_saliency_*"))) == 1  # --out: no new folder there
    assert_one_line_error(run_cli("probe", "saliency", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--layer", "no.such", "--db", db, "--out", tmp_path), "no.such")


def test_a_v2_store_gains_the_new_saliency_columns_and_keeps_its_rows(tmp_path):
    from bgbench.measures.saliency.probe import saliency_summary
    db = tmp_path / "v2.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, created TEXT NOT NULL,
            status TEXT NOT NULL, model TEXT, spec TEXT, checkpoint_sha256 TEXT, data_root TEXT,
            data_fingerprint TEXT, seed INTEGER, config TEXT NOT NULL, version TEXT NOT NULL, finished TEXT,
            outputs TEXT);
        CREATE TABLE probe_saliency (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            image_id TEXT NOT NULL, label INTEGER NOT NULL, pred INTEGER NOT NULL, precision REAL, iou REAL,
            dice REAL, density_diff REAL, PRIMARY KEY (run_id, image_id));
        INSERT INTO runs VALUES (1, 'probe_saliency', 't', 'done', 'timm:x', '{}', NULL, '/d', 'fp', 0,
            '{"classes": ["a", "b"]}', '0.1.0', 't', '{}');
        INSERT INTO probe_saliency VALUES (1, 'a/1', 0, 0, 0.25, 0.5, 0.6, 0.1);
        INSERT INTO probe_saliency VALUES (1, 'b/1', 1, 1, 0.75, NULL, NULL, NULL);
        PRAGMA user_version=2;
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 5
        assert {"probe_ablate", "probe_attribution"} <= set(store.tables())  # v5's new tables
        rows = [dict(r) for r in store.probe_rows("probe_saliency", 1)]
        assert [(r["image_id"], r["precision"], r["iou"]) for r in rows] == [("a/1", 0.25, 0.5), ("b/1", 0.75, None)]
        assert all(r["coverage_25"] is None and r["ap"] is None for r in rows)
        s = saliency_summary(store, 1)  # old runs still summarise; the measures they lack are empty
        assert s.headline["precision"]["value"] == pytest.approx(0.5) and s.image_mean["ap"]["n"] == 0
        store.insert("probe_saliency", 1, [("c/1", 0, 0, *(0.5,) * len(METRICS))])
        assert len(store.probe_rows("probe_saliency", 1)) == 3
    with Store(db) as store:  # opening again changes nothing
        assert len(store.probe_rows("probe_saliency", 1)) == 3


def test_a_v3_store_gains_the_noise_prediction_column_and_keeps_its_rows(tmp_path):
    db = tmp_path / "v3.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, created TEXT NOT NULL,
            status TEXT NOT NULL, model TEXT, spec TEXT, checkpoint_sha256 TEXT, data_root TEXT,
            data_fingerprint TEXT, seed INTEGER, config TEXT NOT NULL, version TEXT NOT NULL, finished TEXT,
            outputs TEXT);
        CREATE TABLE probe_noise (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            image_id TEXT NOT NULL, label INTEGER NOT NULL, region TEXT NOT NULL, level REAL NOT NULL,
            trial INTEGER NOT NULL, correct INTEGER NOT NULL, PRIMARY KEY (run_id, image_id, region, level, trial));
        INSERT INTO runs VALUES (1, 'probe_noise', 't', 'done', 'timm:x', '{}', NULL, '/d', 'fp', 0,
            '{"levels": [0.5], "kind": "sigma"}', '0.1.0', 't', '{}');
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'fg', 0.5, 0, 1);
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'bg', 0.5, 0, 0);
        PRAGMA user_version=3;
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 5
        rows = [dict(r) for r in store.probe_rows("probe_noise", 1)]
        assert sorted((r["region"], r["correct"], r["pred"]) for r in rows) == [("bg", 0, None), ("fg", 1, None)]
        assert noise_summary(store, 1).curves["fg"][0]["acc"] == 1.0  # old rows still summarise
        store.insert("probe_noise", 1, [("b/1", 1, "fg", 0.5, 0, 0, 3)])
        assert store.probe_rows("probe_noise", 1)[-1]["pred"] == 3


def test_noise_levels_read_as_their_grid_writes_them():
    """RIVAL10 writes σ as k/255 (compute_noise_robustness.py: 30/255 ... 210/255); so do custom σ
    levels that are whole 255ths; other levels (HardImageNet's 0.125, L2 norms) stay numbers."""
    from bgbench.measures.noise.levels import grid_label, level_label, resolve_levels
    assert resolve_levels(["60/255", "120/255"], "sigma") == ("custom", [60 / 255, 120 / 255])
    assert resolve_levels([f"{k}/255" for k in range(30, 211, 30)], "sigma")[0] == "rival10"
    assert grid_label("custom", "sigma", [60 / 255, 120 / 255]) == "custom σ 60/255 … 120/255 (2 levels)"
    assert [level_label(v, "sigma", "hardimagenet") for v in (0.125, 0.75)] == ["0.125", "0.75"]
    assert [level_label(v, "sigma") for v in (0.25, 1.0)] == ["0.25", "1"]
    assert level_label(50.0, "l2", "rival10") == "50"


def test_a_v4_store_gains_the_ablate_and_attribution_tables_and_keeps_its_rows(tmp_path):
    db = tmp_path / "v4.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, created TEXT NOT NULL,
            status TEXT NOT NULL, model TEXT, spec TEXT, checkpoint_sha256 TEXT, data_root TEXT,
            data_fingerprint TEXT, seed INTEGER, config TEXT NOT NULL, version TEXT NOT NULL, finished TEXT,
            outputs TEXT);
        CREATE TABLE probe_noise (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            image_id TEXT NOT NULL, label INTEGER NOT NULL, region TEXT NOT NULL, level REAL NOT NULL,
            trial INTEGER NOT NULL, correct INTEGER NOT NULL, pred INTEGER,
            PRIMARY KEY (run_id, image_id, region, level, trial));
        INSERT INTO runs VALUES (1, 'probe_noise', 't', 'done', 'timm:x', '{}', NULL, '/d', 'fp', 0,
            '{"levels": [0.5], "kind": "sigma"}', '0.1.0', 't', '{}');
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'fg', 0.5, 0, 1, 0);
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'bg', 0.5, 0, 0, 2);
        PRAGMA user_version=4;
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 5
        assert {"probe_ablate", "probe_attribution", "probe_features"} <= set(store.tables())
        assert store.probe_rows("probe_ablate", 1) == [] and store.probe_rows("probe_attribution", 1) == []
        rows = [dict(r) for r in store.probe_rows("probe_noise", 1)]
        assert sorted((r["region"], r["correct"], r["pred"]) for r in rows) == [("bg", 0, 2), ("fg", 1, 0)]
        # v5 noise rows may name an attribute's region; the columns are v4's
        store.insert("probe_noise", 1, [("a/1", 0, "attr:dot", 0.5, 0, 1, 0)])
        assert {r["region"] for r in store.probe_rows("probe_noise", 1)} == {"fg", "bg", "attr:dot"}
