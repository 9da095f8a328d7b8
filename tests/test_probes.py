"""The noise and saliency probes: engines on hand-made inputs, models whose answer is known by
construction, and the CLI end to end on the tiny Synthetic-9."""
import json

import numpy as np
import pytest
import torch
import torch.nn as nn

from bgbench.analyses.noise import NoiseConfig, noise_summary, summarize
from bgbench.analyses.noise_engine import noisy_correct, region_noise
from bgbench.analyses.saliency import gradcam_batch, resolve_layer
from bgbench.analyses.saliency_metrics import saliency_alignment
from bgbench.errors import BgbenchError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli


def _left_half(n=2, h=8, w=8):
    m = torch.zeros(n, 1, h, w)
    m[..., : w // 2] = 1
    return m


def test_region_noise_stays_in_its_region_and_l2_hits_the_level():
    m = _left_half()
    g = torch.Generator().manual_seed(0)
    fg = region_noise((3, 2, 3, 8, 8), m, "fg", 0.5, "sigma", g)
    bg = region_noise((3, 2, 3, 8, 8), m, "bg", 0.5, "sigma", g)
    assert (fg[..., 4:] == 0).all() and (fg[..., :4] != 0).all()
    assert (bg[..., :4] == 0).all() and (bg[..., 4:] != 0).all()
    l2 = region_noise((3, 2, 3, 8, 8), m, "bg", 30.0, "l2", g)
    assert l2.flatten(2).norm(dim=2).numpy() == pytest.approx(np.full((3, 2), 30.0), rel=1e-5)


def test_a_model_that_reads_only_the_foreground_has_rfs_one():
    x = torch.full((2, 3, 8, 8), 0.5)
    m = _left_half()
    labels = torch.tensor([1, 1])

    def predict(batch):  # right iff the foreground (left half) is untouched
        return torch.where((batch[..., :4] - 0.5).abs().amax(dim=(1, 2, 3)) == 0, 1, 0)
    ok = noisy_correct(predict, x, m, labels, [0.25, 0.5], trials=3, kind="sigma",
                       generator=torch.Generator().manual_seed(0)).numpy()
    assert ok.shape == (2, 2, 3, 2)
    assert not ok[0].any() and ok[1].all()  # fg noise: always wrong; bg noise: always right
    rows = [(f"c/{k}", 1, r, lvl, t, int(ok[ri, li, t, k])) for ri, r in enumerate(("fg", "bg"))
            for li, lvl in enumerate((0.25, 0.5)) for t in range(3) for k in range(2)]
    s = summarize(rows)
    assert s.rfs == {0.25: 1.0, 0.5: 1.0} and s.rfs_overall == 1.0


def test_summary_by_hand():
    # fg at level 1: trials right on 1/2, 2/2, 0/2 -> mean 0.5; bg: 2/2 each trial -> 1.0
    fg = [("x", 0, "fg", 1.0, t, c) for t, cs in enumerate([(1, 0), (1, 1), (0, 0)]) for c in cs]
    bg = [("x", 0, "bg", 1.0, t, 1) for t in range(3) for _ in range(2)]
    s = summarize(fg + bg)
    f = s.curves["fg"][0]
    assert f["acc"] == pytest.approx(0.5) and f["n"] == 6 and f["trials"] == 3
    # t interval over trial accuracies (0.5, 1, 0): sd 0.5, t(0.975, 2) = 4.3027
    assert f["hi"] == pytest.approx(min(1.0, 0.5 + 4.302653 * 0.5 / np.sqrt(3)), abs=1e-5)
    assert f["lo"] == 0.0
    assert s.rfs[1.0] == pytest.approx((1.0 - 0.5) / (2 * 0.25))


def test_noise_config_checks():
    with pytest.raises(BgbenchError, match="--trials"):
        NoiseConfig(trials=0)
    with pytest.raises(BgbenchError, match="--noise"):
        NoiseConfig(kind="uniform")
    assert NoiseConfig(kind="l2").levels == [30.0, 60.0, 90.0, 120.0, 150.0, 180.0]
    assert len(NoiseConfig().levels) == 6


def test_noise_probe_cli_stores_per_image_rows(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root, "--levels", "0.5",
                   "--trials", "2", "--quiet", "--json", "--db", db)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    with Store(db) as store:
        n = store.conn.execute("SELECT COUNT(*) FROM probe_noise WHERE run_id=?", (doc["run_id"],)).fetchone()[0]
        again = noise_summary(store, doc["run_id"]).to_dict()
        assert store.get_run(doc["run_id"])["kind"] == "probe_noise"
    assert n == 36 * 2 * 2  # images x regions x trials
    assert again["rfs_overall"] == pytest.approx(doc["rfs_overall"])
    assert set(again["curves"]) == {"fg", "bg"} and again["curves"]["fg"][0]["level"] == 0.5
    assert_one_line_error(run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--trials", "0", "--db", db), "--trials")


def test_saliency_metrics_by_hand():
    cam = np.zeros((4, 4))
    cam[0, 0], cam[0, 1], cam[3, 3] = 1.0, 0.4, 1.0
    mask = np.zeros((4, 4), bool)
    mask[0, :2] = True
    s = saliency_alignment(cam, mask)
    assert s["precision"] == pytest.approx(1.4 / 2.4)
    # binarized at 0.5: {(0,0), (3,3)}; mask {(0,0), (0,1)}: IoU 1/3, Dice 2/4
    assert s["iou"] == pytest.approx(1 / 3) and s["dice"] == pytest.approx(0.5)
    assert s["density_diff"] == pytest.approx(0.7 - 1.0 / 14)
    assert np.isnan(saliency_alignment(np.zeros((4, 4)), mask)["precision"])


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
    cams, pred = gradcam_batch(model, layer, x)
    assert (pred == 0).all()
    fg = np.zeros((16, 16), bool)
    fg[:, :8] = True  # the object is on the left
    s = [saliency_alignment(c, fg) for c in cams.numpy()]
    want = 1.0 if left else 0.0
    assert [r["precision"] for r in s] == pytest.approx([want] * 3, abs=0.05)
    with pytest.raises(BgbenchError, match="--layer"):
        resolve_layer(model, "nope")


def test_saliency_probe_cli(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("probe", "saliency", "--model", "timm:test_resnet", "--data", synth_root, "--quiet", "--json",
                   "--db", db, "--out", tmp_path / "sal", "--examples", "4")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["layer"] and (tmp_path / "sal" / "saliency_overlays.png").stat().st_size > 1000
    with Store(db) as store:
        run = store.runs("probe_saliency")[-1]
        assert json.loads(run["outputs"])["overlays"] == doc["overlays"]
        names = {r["name"] for r in store.metrics(run["id"])}
        rows = store.conn.execute("SELECT COUNT(*) FROM probe_saliency WHERE run_id=?", (run["id"],)).fetchone()[0]
    assert {"saliency_precision", "saliency_iou", "saliency_dice", "saliency_density_diff"} <= names
    assert rows == 36
    assert_one_line_error(run_cli("probe", "saliency", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--layer", "no.such", "--db", db, "--out", tmp_path), "no.such")
