"""bgbench's RIVAL10 probes on Hard ImageNet's data against Hard ImageNet's own code (vendored in
tests/helpers/hardimagenet_source.py: `rfs.py`, `ablations.py`, `saliency_analysis.py`), on a tree
written in its release layout and a tiny deterministic 1000-class model: the same noisy inputs
give the same accuracies and RFS per level, the same ablated images the same accuracies and
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
from helpers import hardimagenet_source as source
from helpers.hardimagenet_tree import INDICES, write_tree

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    hard, imagenet, made = write_tree(tmp_path_factory.mktemp("hin"), per_class=1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(IMAGENET_ENV, str(imagenet))
        yield hard, imagenet, made


def _dset(trees, ft=False):
    return source.HardImageNet(split="val", ft=ft, imagenet_root=trees[1], mask_root=trees[0])


@pytest.fixture(scope="module")
def model(trees):
    """conv 8x8/8 -> ReLU -> mean -> linear to 1000 classes; the 15 classes' rows are the mean
    features of their clean images (a nearest-prototype rule), every other class never wins."""
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 8, 8, stride=8)
    net = nn.Sequential(conv, nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1000)).eval()
    norm = source.transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)
    dset = _dset(trees)
    with torch.no_grad():
        feats = {}
        for k in range(len(dset)):
            img, _, label = dset[k]
            feats.setdefault(label, []).append(net[:4](norm(img)[None])[0])
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


def test_noise_equals_rfs_py_per_level_on_the_same_noise(trees, model):
    from bgbench.measures.noise.draws import draw_seed, image_noise
    from bgbench.measures.noise.probe import NoiseConfig
    measure = get_measure("noise")
    cfg = NoiseConfig(trials=2, seed=3, bootstrap_replicates=20)  # no levels: Hard ImageNet's own grid
    result = measure.compute(model, trees[0], cfg, progress=False)
    assert result.config["grid"] == "hardimagenet" and result.config["levels"] == [0.125, 0.25, 0.375, 0.5, 0.625,
                                                                                   0.75]
    summary = measure.summarize(result.rows, result.config)
    dset = _dset(trees)
    ids = []
    for k in range(len(dset)):
        name = dset.mask_paths[k].split("/")[-1]
        wnid = name.split("_")[0]
        ids.append(f"{wnid}/{name[len(wnid) + 1:].rsplit('.', 1)[0]}")
    checked = 0
    for li, level in enumerate(result.config["levels"]):
        calls, drawn = [], {}

        def randn_like(imgs, trial):
            """bgbench's draws for this batch: each image's object field, which rfs.py multiplies
            by the mask and by 1 - mask, as bgbench cuts its foreground and background noise from
            it. Every trial of an image comes from one draw of its noise, made once."""
            b = len(calls) // cfg.trials
            calls.append(trial)
            out = []
            for i in range(imgs.shape[0]):
                image_id = ids[36 * b + i]
                if image_id not in drawn:
                    drawn[image_id] = torch.from_numpy(image_noise(
                        draw_seed(cfg.seed, image_id, "object", level), cfg.trials, 224, 224)).permute(0, 3, 1, 2)
                out.append(drawn[image_id][trial])
            return torch.stack(out)
        rfs, fg, bg, _, _ = source.noisy_fg_bg_accs(model.net, dset, noise_sigma=level, trials=cfg.trials,
                                                    randn_like=randn_like)
        assert summary.curves["fg"][li]["acc"] == pytest.approx(fg, abs=1e-12), level
        assert summary.curves["bg"][li]["acc"] == pytest.approx(bg, abs=1e-12), level
        assert summary.rfs[level]["value"] == pytest.approx(rfs, abs=1e-12), level
        checked += 0 < fg < 1 or 0 < bg < 1
    assert checked >= 3  # accuracies that can move: the comparison means something


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
    result = measure.compute(model, trees[0], AblateConfig(bootstrap_replicates=20), progress=False)
    assert result.config["scoring"] == "hardimagenet"
    summary = measure.summarize(result.rows, result.config)
    dset = _dset(trees)
    # the copies themselves, image by image
    for k in range(len(dset)):
        img, mask, _ = dset[k]
        want_box = source.replace_with_gray(img[None], mask[None], False)[0]
        assert np.array_equal(box_gray(img.numpy(), mask[0].numpy() > 0), want_box.numpy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the source's 0-wide tile: x // 0
            want_tile = source.tile(img[None].clone(), mask[None])[0]
        got, blacked = tile_ablation(img.numpy(), mask[0].numpy() > 0)
        assert np.array_equal(got, want_tile.numpy()), k
    # the figures: accuracy and mean true-class confidence under each ablation (bs=1, as
    # compute_ablated_accs runs it: line 208)
    ablations = {"none": lambda x, y: x, "fg": source.replace_with_gray,
                 "bbox": lambda x, y: source.replace_with_gray(x, y, False), "tile": source.tile}
    stored = {(name, variant): value for name, variant, value, *_ in summary.metric_rows()}
    moved = 0
    for region, ablation in ablations.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the source's 0-wide tile: x // 0
            acc, confidences = source.eval_under_ablation(model.net, ablation, dset, bs=1, shuffle=False)
        e = summary.regions["fg" if region == "none" else region]
        ours_acc, ours_prob = (e["clean_acc"], e["clean_prob"]) if region == "none" else \
            (e["ablated_acc"], e["ablated_prob"])
        assert ours_acc == pytest.approx(acc, abs=1e-6), region
        assert ours_prob == pytest.approx(float(np.average(confidences)), abs=1e-5), region
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
        mask = torch.from_numpy(np.repeat(m[None].astype(np.float32), 3, axis=0))
        got, black = tile_ablation(img.numpy(), m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the source's 0-wide tile: x // 0
            want = source.tile(img[None].clone(), mask[None])[0].numpy()
        assert np.array_equal(got, want), trial
        compared += ndimage.label(m)[1] > 1
        blacked += black > 0
    assert compared >= 5 and blacked >= 1


def test_saliency_equals_saliency_analysis_py(trees, model):
    from pytorch_grad_cam import GradCAM

    from bgbench.measures.saliency.metrics import absolute_iou_and_dice  # noqa: F401 (the code under test)
    from bgbench.measures.saliency.probe import SaliencyConfig
    measure = get_measure("saliency")
    result = measure.compute(model, trees[0], SaliencyConfig(examples=0, bootstrap_replicates=20), progress=False)
    assert result.config["scoring"] == "hardimagenet" and result.config["target"] == "true class"
    summary = measure.summarize(result.rows, result.config)
    dset = _dset(trees)
    layer = model.net[0]
    cam = GradCAM(model=model, target_layers=[layer])
    ious, densities = source.compute_salient_alignment_scores(dset, model, layer, cam)
    rows = {r.image_id: r for r in result.rows}
    names = [p.split("/")[-1] for p in dset.mask_paths]
    ids = [f"{n.split('_')[0]}/{n[len(n.split('_')[0]) + 1:].rsplit('.', 1)[0]}" for n in names]
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
