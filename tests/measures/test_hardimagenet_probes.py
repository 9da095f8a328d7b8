"""bgbench's RIVAL10 probes on Hard ImageNet's data against Hard ImageNet's own definitions
(`rfs.py`, `ablations.py`, `saliency_analysis.py`, written out in tests/helpers/hardimagenet_oracle.py),
on a tree written in its release layout and a tiny deterministic 1000-class model: the same noisy
inputs give the same accuracies and RFS per level, the same ablated images the same accuracies and
true-class confidences, the same Grad-CAM maps the same IoU and delta density.

One image per class (15 images: the loader's 15 classes, masks of one and two instances, PNG and
JPEG masks, one emptied by the centre crop), shared by the module's tests."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

from bgbench.data.hardimagenet import IMAGENET_ENV
from bgbench.measures.registry import get_measure
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from bgbench.runs import run_measure
from helpers import hardimagenet_oracle as oracle
from helpers.hardimagenet_tree import INDICES, write_tree

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    hard, imagenet, made = write_tree(tmp_path_factory.mktemp("hin"), per_class=1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(IMAGENET_ENV, str(imagenet))
        yield hard, imagenet, made


def _items(trees):
    """The loader's items in its order, labelled with their ImageNet index (its ft=False)."""
    return oracle.release_items(trees[0], trees[1], ft=False)


@pytest.fixture(scope="module")
def model(trees):
    """conv 8x8/8 -> ReLU -> mean -> linear to 1000 classes; the 15 classes' rows are the mean
    features of their clean images (a nearest-prototype rule), every other class never wins."""
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 8, 8, stride=8)
    net = nn.Sequential(conv, nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1000)).eval()
    with torch.no_grad():
        feats = {}
        for it in _items(trees):
            feats.setdefault(it.label, []).append(net[:4](oracle.imagenet_normalized(it.image)[None])[0])
        lin = net[4]
        lin.weight.zero_()
        lin.bias.fill_(-1e3)
        for label, fs in feats.items():
            proto = torch.stack(fs).mean(0)
            lin.weight[label] = proto
            lin.bias[label] = -0.5 * proto.pow(2).sum()
    spec = ModelSpec(name="toy:hin", arch="toy", num_classes=1000, label_space="imagenet1k",
                     mean=IMAGENET_MEAN, std=IMAGENET_STD)
    return BgModel(net, spec).eval()


def _bgbench_noise(seed: int, level: float, trials: int):
    """(image id, trial) -> bgbench's draw for that image at `level`: its object field (3, H, W),
    which rfs.py multiplies by the mask and by 1 - mask, as bgbench cuts its foreground and
    background noise from it."""
    from bgbench.measures.noise.draws import draw_seed, image_noise
    drawn = {}

    def noise_of(image_id: str, trial: int) -> torch.Tensor:
        if image_id not in drawn:
            drawn[image_id] = torch.from_numpy(image_noise(draw_seed(seed, image_id, "object", level), trials, 224,
                                                           224)).permute(0, 3, 1, 2)
        return drawn[image_id][trial]
    return noise_of


@pytest.mark.parametrize("kind", ["sigma", "l2"])
def test_noise_equals_rfs_py_per_level_on_the_same_noise(trees, model, kind, tmp_path):
    """σ and L2 noise on Hard ImageNet's grid. Under L2 noise the image whose mask the centre crop
    empties is wrong on the foreground at every level: rfs.py's `l2_normalize` divides its empty
    noise by a zero norm, the image is NaN, and torch's argmax over its NaN logits is class 0,
    none of Hard ImageNet's 15."""
    from bgbench.measures.noise.probe import NoiseConfig
    measure = get_measure("noise")
    cfg = NoiseConfig(trials=2, seed=3, kind=kind, bootstrap_replicates=20)  # no levels: Hard ImageNet's own grid
    result = run_measure(measure, model, trees[0], cfg, progress=False)
    assert result.config["grid"] == "hardimagenet" and result.config["levels"] == (
        [0.125, 0.25, 0.375, 0.5, 0.625, 0.75] if kind == "sigma" else [30.0, 60.0, 90.0, 120.0, 150.0, 180.0])
    summary = measure.summarize(result.rows, result.config)
    items = _items(trees)
    empty = [it for it in items if it.mask.sum() == 0]
    assert len(empty) == 1
    nan = torch.full((1, 3, 224, 224), float("nan"))
    assert int(model.net(oracle.imagenet_normalized(nan)).argmax(1)) == 0 and 0 not in INDICES
    checked = 0
    for li, level in enumerate(result.config["levels"]):
        rfs, fg, bg = oracle.noisy_accuracies(model.net, items, level, cfg.trials,
                                              _bgbench_noise(cfg.seed, level, cfg.trials), l2=kind == "l2")
        assert summary.curves["fg"][li]["acc"] == pytest.approx(fg, abs=1e-12), level
        assert summary.curves["bg"][li]["acc"] == pytest.approx(bg, abs=1e-12), level
        assert summary.rfs[level]["value"] == pytest.approx(rfs, abs=1e-12), level
        checked += 0 < fg < 1 or 0 < bg < 1
    assert checked >= 3  # accuracies that can move: the comparison means something
    fg_rows = [r for r in result.rows if r.image_id == empty[0].image_id and r.region == "fg"]
    if kind == "l2":
        assert fg_rows and all(r.correct == 0 and r.pred is None for r in fg_rows)
        from bgbench.recording import record
        with Store(tmp_path / "r.db") as store:  # a copy with no prediction is stored, and reads back as it was
            again = measure.read(store, record(result, store))
        assert again.to_dict() == summary.to_dict()
    else:  # σ noise on an empty region is no noise: the clean image, as there
        assert len({r.pred for r in fg_rows}) == 1 and fg_rows[0].pred is not None


def test_the_noise_command_takes_the_grid_of_rfs_py_unless_levels_are_named(trees, tmp_path, monkeypatch):
    """`bgbench probe noise` without --levels runs Hard ImageNet's grid (rfs.py lines 96-97) on its
    data, and records it; --levels rival10 runs the grid named."""
    import json

    from conftest import run_cli
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    for asked, grid, levels in (((), "hardimagenet", 6), (("--levels", "rival10"), "rival10", 7)):
        proc = run_cli("probe", "noise", "--model", f"timm:{TAG}", "--data", trees[0], "--trials", "1", *asked,
                       "--db", tmp_path / "r.db", "--json", "--quiet")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["grid"]["name"] == grid and len(doc["grid"]["levels"]) == levels, asked
        with Store(tmp_path / "r.db") as store:
            config = json.loads(store.get_run(doc["run_id"])["config"])
        assert config["grid"] == grid and config["levels"] == doc["grid"]["levels"]


def test_ablations_equal_ablations_py(trees, model):
    from bgbench.measures.ablate.hardimagenet import box_gray, tile_ablation
    from bgbench.measures.ablate.probe import AblateConfig
    measure = get_measure("ablate")
    result = run_measure(measure, model, trees[0], AblateConfig(bootstrap_replicates=20), progress=False)
    assert result.config["scoring"] == "hardimagenet"
    summary = measure.summarize(result.rows, result.config)
    items = _items(trees)
    # the ablated images themselves, image by image
    for k, it in enumerate(items):
        img, mask = it.image.numpy(), it.mask[0].numpy()
        assert np.array_equal(box_gray(img, mask > 0), oracle.gray_box(img, mask))
        got, blacked = tile_ablation(img, mask > 0)
        assert np.array_equal(got, oracle.tiled(img, mask)), k
    # the figures: accuracy and mean true-class confidence under each ablation (bs=1, as
    # compute_ablated_accs runs it: line 208)
    ablations = {"none": lambda x, y: x, "fg": oracle.gray_object, "bbox": oracle.gray_box, "tile": oracle.tiled}
    stored = {(name, variant): value for name, variant, value, *_ in summary.metric_rows()}
    moved = 0
    for region, ablation in ablations.items():
        acc, confidence = oracle.ablated_figures(model.net, items, ablation)
        e = summary.regions["fg" if region == "none" else region]
        ours_acc, ours_prob = (e["clean_acc"], e["clean_prob"]) if region == "none" else \
            (e["ablated_acc"], e["ablated_prob"])
        assert ours_acc == pytest.approx(acc, abs=1e-6), region
        assert ours_prob == pytest.approx(confidence, abs=1e-5), region
        assert stored[("ablation_acc", region)] == pytest.approx(acc, abs=1e-6), region  # the scorecard's figure
        moved += region != "none" and abs(e["acc_drop"]["value"]) > 0
    assert moved >= 2


def test_tile_equals_the_source_on_masks_of_several_instances():
    """Random masks of several blobs, some at the border, on 224 x 224 images: the same pixels,
    including where the source's chosen tile is empty (NumPy's division by zero: a black box)."""
    from scipy import ndimage

    from bgbench.measures.ablate.hardimagenet import tile_ablation
    rng = np.random.default_rng(5)
    compared = blacked = 0
    for trial in range(40):
        img = torch.from_numpy(rng.random((3, 224, 224), dtype=np.float32))
        m = np.zeros((224, 224), bool)
        for _ in range(rng.integers(1, 4)):
            y, x = rng.integers(-20, 224, 2)
            h, w = rng.integers(2, 90, 2)
            m[max(y, 0):y + h, max(x, 0):x + w] = True
        got, black = tile_ablation(img.numpy(), m)
        assert np.array_equal(got, oracle.tiled(img.numpy(), m.astype(np.float32))), trial
        compared += ndimage.label(m)[1] > 1
        blacked += black > 0
    assert compared >= 5 and blacked >= 1


def test_saliency_equals_saliency_analysis_py(trees, model):
    from pytorch_grad_cam import GradCAM

    from bgbench.measures.saliency.metrics import absolute_iou_and_dice  # noqa: F401 (the code under test)
    from bgbench.measures.saliency.probe import SaliencyConfig
    measure = get_measure("saliency")
    result = run_measure(measure, model, trees[0], SaliencyConfig(examples=0, bootstrap_replicates=20), progress=False)
    assert result.config["scoring"] == "hardimagenet" and result.config["target"] == "true class"
    summary = measure.summarize(result.rows, result.config)
    items = _items(trees)
    ious, densities = oracle.saliency_scores(GradCAM(model=model.eval(), target_layers=[model.net[0]]), items)
    rows = {r.image_id: r for r in result.rows}
    ids = [it.image_id for it in items]
    columns = [c for c, _ in measure.columns]
    assert len(ious) == len(ids) - 1  # the mask the centre crop leaves empty is left out, as there
    ties = 0
    for k, image_id in enumerate(ids):
        row = dict(zip(columns, rows[image_id]))
        if k not in ious:
            assert row["iou"] is None and row["density_diff"] is None
            continue
        # bgbench feeds channels-last batches, whose convolution differs from a contiguous one in the
        # last float32 bits; Grad-CAM's min-max scaling carries that into the map (~1e-4 at most here)
        assert row["density_diff"] == pytest.approx(densities[k], abs=1e-3), image_id
        if row["iou"] != pytest.approx(ious[k], abs=1e-9):
            ties += 1  # a pixel whose map value sits at 0.5 within float32 noise of the two maps
            assert row["iou"] == pytest.approx(ious[k], abs=0.05), image_id
    assert ties <= 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figures = summary.hard_imagenet()
        assert figures["iou"]["value"] == pytest.approx(np.nanmean(list(ious.values())), abs=0.01)
        assert figures["density_diff"]["value"] == pytest.approx(np.nanmean(list(densities.values())), abs=1e-3)
    assert 0 < figures["iou"]["value"] < 1 and not math.isnan(figures["density_diff"]["value"])
    assert "Hard ImageNet (saliency_analysis.py" in summary.text()
