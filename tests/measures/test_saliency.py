"""The saliency probe against pytorch-grad-cam (the `grad-cam` package RIVAL10 used) with RIVAL10's
formulas written out below, measures worked by hand, and the CLI end to end."""
import json
import math

import numpy as np
from hypothesis import given, settings, strategies as st
import pytest
import torch
import torch.nn as nn

from bgbench.measures.saliency import MEASURE as SALIENCY
from bgbench.measures.saliency.probe import SaliencyConfig
from bgbench.probing.gradcam import gradcam_batch, resolve_layer
from bgbench.probing.gradcam import default_layer
from bgbench.measures.saliency.metrics import METRICS, saliency_alignment
from bgbench.measures.saliency.overlays import choose_examples
from bgbench.measures.saliency.summary import SaliencyRow, summarize_saliency
from bgbench.errors import BgbenchError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from bgbench.runs import run_measure
from conftest import assert_one_line_error, run_cli
from helpers.saliency_oracle import check_against_grad_cam, rival10_measures, synth64  # noqa: F401 (fixture)


def _strict_json(text):
    """json.loads that refuses NaN/Infinity, as a strict JSON reader would."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


# ----------------------------------------------------------------------------------------------
# saliency: RIVAL10's measures, written out here from its code (bg_fg_saliency.py, utils.py)


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
    assert s == pytest.approx(rival10_measures(g, mask))
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


def test_a_bootstrap_of_mostly_one_image_per_class_is_marked_degenerate():
    """Seven images, six predicted classes: the stratified bootstrap resamples five classes of one
    image into themselves, and its narrow interval would look precise. It is marked as RFS's is."""
    values = {m: np.linspace(0.1, 0.9, 7) for m in METRICS}
    preds = [0, 0, 1, 2, 3, 4, 5]
    s = summarize_saliency(values, preds=preds, class_name=lambda i: f"c{i}", replicates=300)
    for e in (s.headline["precision"], s.image_mean["precision"]):
        assert e["lo"] == e["hi"] == e["value"]
    assert "only 1 of 6 predicted classes hold more than one image" in s.headline["precision"]["degenerate"]
    assert "only 2 of 7 images share their predicted class" in s.image_mean["precision"]["degenerate"]
    assert "precision 0.556 [degenerate, n=6] (degenerate: only 1 of 6 predicted classes" in s.text()
    doc = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert doc["headline"]["precision"]["degenerate"].startswith("only 1 of 6")
    # the same values with two images in every class: a real interval
    wide = summarize_saliency({m: np.linspace(0.1, 0.9, 8) for m in METRICS}, preds=[0, 0, 1, 1, 2, 2, 3, 3],
                              class_name=lambda i: f"c{i}", replicates=300)
    assert wide.headline["precision"]["lo"] < wide.headline["precision"]["hi"]
    assert "degenerate" not in wide.headline["precision"]


def test_overlay_examples_are_the_extremes_of_each_predicted_class():
    nan = float("nan")
    rows = [SaliencyRow(*r) for r in (("a", 0, 0, 0.5), ("b", 0, 0, 0.9), ("c", 0, 0, 0.1), ("d", 0, 2, nan),
                                      ("e", 0, 2, 0.3))]
    picked = [(ex.image_id, ex.rank) for ex in choose_examples(rows, per_class=2)]
    assert picked == [("b", "most aligned"), ("c", "least aligned"), ("e", "most aligned"), ("d", "least aligned")]
    assert [ex.image_id for ex in choose_examples(rows, per_class=1)] == ["b", "e"]
    assert choose_examples(rows, per_class=0) == []


# ----------------------------------------------------------------------------------------------
# saliency: the whole probe against pytorch-grad-cam + RIVAL10's formulas


def _timm_model(arch, **kw):
    import timm
    torch.manual_seed(0)
    net = timm.create_model(arch, pretrained=False, num_classes=9, **kw)
    return BgModel(net, ModelSpec(name=f"timm:{arch}", arch=arch, num_classes=9)).eval()


@pytest.mark.parametrize("layer", [None, "layer2"])  # the default last stage (2x2 at 64 px), and 8x8
def test_saliency_equals_rival10_with_pytorch_grad_cam_on_a_resnet(synth64, layer):
    model = _timm_model("test_resnet")
    result = run_measure(SALIENCY, model, synth64, SaliencyConfig(layer=layer, batch_size=64, examples=0),
                            progress=False)
    assert result.config["layer"] == (layer or "layer4")
    check_against_grad_cam(model, model.net.get_submodule(result.config["layer"]), synth64, result.rows)
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
    result = run_measure(SALIENCY, model, synth64, SaliencyConfig(batch_size=64, examples=0), progress=False)
    check_against_grad_cam(model, model.net.blocks[-1].norm1, synth64, result.rows, reshape=to_grid,
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




@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1e-40, 0.25, 0.5, 0.5000001, 1.0, 3.0e38]), min_size=1, max_size=64),
       st.lists(st.booleans(), min_size=64, max_size=64), st.booleans())
def test_the_sort_by_keys_orders_values_and_flags_as_an_argsort(values, flags, negative):
    """`sorted_with_mask` sorts uint32 keys (a value's bits and its object flag) instead of arg-sorting:
    the same sorted values, and in each run of equal values the same number on the object, for
    maps with ties, -0.0, subnormals and the largest floats (and, with a negative value, the
    argsort it falls back to); the AP and the coverage read nothing else."""
    from bgbench.measures.saliency.metrics import sorted_with_mask
    g = np.array(values + ([-1.0] if negative else []), dtype=np.float32)
    m = np.array(flags[:g.size], dtype=np.float32)
    sals, inside = sorted_with_mask(g, m)
    order = np.argsort(g, kind="stable")
    want_s, want_in = g[order], m[order] > 0
    assert np.array_equal(sals, want_s) and sals.dtype == np.float32
    for v in np.unique(want_s):
        assert inside[sals == v].sum() == want_in[want_s == v].sum()


def _awkward_maps(seed=0, n=48, h=24, w=31):
    """Maps and masks with what the measures' edge cases need: ties (quantized and binary maps),
    all-zero maps, empty and full masks, beside plain random ones."""
    rng = np.random.default_rng(seed)
    maps, masks = [], []
    for k in range(n):
        g = rng.random((h, w)).astype(np.float32) ** 3
        if k % 5 == 1:
            g = np.round(g * 4) / 4
        if k % 7 == 2:
            g[:] = 0
        if k % 9 == 3:
            g = (g > 0.3).astype(np.float32)
        m = rng.random((h, w)) > (0.3 if k % 4 else 0.9)
        if k % 11 == 4:
            m[:] = False
        if k % 13 == 5:
            m[:] = True
        maps.append(g.astype(np.float32))
        masks.append(m)
    return np.stack(maps), np.stack(masks)


def test_the_devices_batched_measures_are_rival10s():
    """`device_metrics.alignment_batch` (torch, a whole batch at once, as a card computes it) gives
    RIVAL10's measures written out independently (`rival10_measures`: its binarize, its threshold
    loop, sklearn's AP) on maps with ties, zero maps and empty or full masks; NaN exactly where
    they are undefined; with Hard ImageNet's options its absolute IoU and Dice and NaN rows for
    empty masks."""
    import warnings

    from bgbench.measures.saliency.device_metrics import alignment_batch
    maps, masks = _awkward_maps()
    got = alignment_batch(torch.from_numpy(maps), torch.from_numpy(masks)).numpy()
    hard = alignment_batch(torch.from_numpy(maps), torch.from_numpy(masks), absolute_iou=True,
                           empty_is_nan=True).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(len(maps)):
            want = rival10_measures(maps[k], masks[k])
            if not masks[k].any():  # sklearn's AP of no positive is 0 with a warning; bgbench's is NaN
                want["ap"] = float("nan")
            for j, name in enumerate(METRICS):
                if math.isnan(want[name]):
                    assert math.isnan(got[k, j]), (k, name)
                else:
                    assert got[k, j] == pytest.approx(want[name], abs=1e-6), (k, name)  # its sums are float32
            if not masks[k].any():
                assert np.isnan(hard[k]).all()
                continue
            on, obj = maps[k] >= 0.5, masks[k]
            inter, union = np.sum(on & obj), np.sum(on | obj)
            assert hard[k, 1] == pytest.approx((inter + 1e-10) / (union + 1e-10), abs=1e-12)
            assert hard[k, 2] == pytest.approx((2 * inter + 1e-10) / (union + inter + 1e-10), abs=1e-12)
            assert np.array_equal(hard[k, [0, 3, 4, 5, 6, 7]], got[k, [0, 3, 4, 5, 6, 7]], equal_nan=True)


def test_the_devices_maps_are_pytorch_grad_cams_post_processing():
    """`gradcam.device_maps` repeats pytorch-grad-cam's post-processing (`gradcam_maps`, held to
    pytorch-grad-cam itself above) in torch: within 1e-6, at feature grids that do not divide the
    image."""
    from bgbench.probing.gradcam import device_maps, gradcam_maps
    rng = np.random.default_rng(1)
    for shape, hw in (((6, 32, 7, 7), (224, 224)), ((3, 8, 2, 3), (64, 50)), ((2, 4, 1, 1), (32, 32))):
        terms = rng.standard_normal(shape).astype(np.float32)
        assert np.abs(device_maps(torch.from_numpy(terms), hw).numpy() - gradcam_maps(terms, hw)).max() < 1e-6


@pytest.mark.parametrize("layer", [None, "layer2"])
def test_saliency_measured_as_on_a_card_equals_rival10_with_pytorch_grad_cam(synth64, layer, monkeypatch):
    """The probe's card path (maps and measures on the device, only the measures read back), run on
    the CPU: its rows are RIVAL10's formulas on pytorch-grad-cam's maps, as the host path's are."""
    from bgbench.measures.saliency import probe as saliency_probe
    monkeypatch.setattr(saliency_probe, "measured_on_device", lambda device: True)
    model = _timm_model("test_resnet")
    result = run_measure(SALIENCY, model, synth64, SaliencyConfig(layer=layer, batch_size=64, examples=0),
                              progress=False)
    check_against_grad_cam(model, model.net.get_submodule(result.config["layer"]), synth64, result.rows)


def test_a_class_mean_whose_classes_mostly_hold_one_image_is_marked_degenerate():
    """Issue 58's 8 photos: four in one predicted class, four alone, values from 0.06 to 0.91. Half
    the images share a class, so the image rule passes, but four of five class means are resampled
    into themselves: the headline's interval looked precise and is marked; the image mean's is not."""
    values = {m: np.array([0.45, 0.46, 0.47, 0.46, 0.06, 0.91, 0.30, 0.62]) for m in METRICS}
    s = summarize_saliency(values, preds=[0, 0, 0, 0, 1, 2, 3, 4], class_name=lambda i: f"c{i}", replicates=300)
    head = s.headline["precision"]
    assert head["lo"] == head["hi"] == head["value"]
    assert head["degenerate"].startswith("only 1 of 5 predicted classes hold more than one image")
    assert "degenerate" not in s.image_mean["precision"] and s.image_mean["precision"]["lo"] < \
        s.image_mean["precision"]["hi"]
    assert "[degenerate, n=5]" in s.text()
