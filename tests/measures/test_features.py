"""The features probe (RIVAL10 §5 after Salient ImageNet) against independent oracles: a hand-built
network whose features sit on the object or on the background (a table worked by hand), plain
torch and cv2 recomputing Salient ImageNet's ranking and the maps' shares on a real timm model,
and cv2-upsampled maps for the shares' linear-algebra shortcut."""
import json

import cv2
import numpy as np
import pytest
import torch
import torch.nn as nn
from PIL import Image

import bgbench
from bgbench.measures.features import MEASURE as FEATURES
from bgbench.measures.features.probe import FeaturesConfig
from bgbench.measures.features.engine import background_shares
from bgbench.errors import BgbenchError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from bgbench.runs import run_measure
from conftest import assert_one_line_error, run_cli


def _strict_json(text):
    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")
    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------------------------------------
# a network worked by hand: channel 0 is the red plane (the objects are red), channel 1 the green
# plane (the backgrounds are green), at full resolution, average-pooled into a linear head


class _RedGreen(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.fc = nn.Linear(2, len(weight), bias=False)
        with torch.no_grad():
            self.fc.weight.copy_(torch.tensor(weight, dtype=torch.float32))

    def forward_features(self, x):
        return x[:, :2]

    def forward_head(self, f, pre_logits=False):
        pooled = f.mean(dim=(2, 3))
        return pooled if pre_logits else self.fc(pooled)

    def get_classifier(self):
        return self.fc

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


#: class folder -> object areas (in pixels of 8 x 8 = 64) of its two images
AREAS = {"a": (16, 32), "b": (16, 48)}


def _red_green_data(root):
    """Objects: the first k pixels in row-major order, pure red; backgrounds pure green."""
    for cls, areas in AREAS.items():
        for n, area in enumerate(areas):
            mask = np.zeros(64, np.uint8)
            mask[:area] = 1
            mask = mask.reshape(8, 8)
            img = np.zeros((8, 8, 3), np.uint8)
            img[..., 0] = 255 * mask
            img[..., 1] = 255 * (1 - mask)
            for folder, write in (("original", lambda p: Image.fromarray(img).save(p.with_suffix(".png"))),
                                  ("fg_mask", lambda p: np.save(p.with_suffix(".npy"), mask))):
                path = root / folder / "val" / cls / f"i{n}"
                path.parent.mkdir(parents=True, exist_ok=True)
                write(path)
    return root


def _hand_model(weight):
    spec = ModelSpec(name="red-green", arch="hand", num_classes=2, mean=(0, 0, 0), std=(1, 1, 1))
    return BgModel(_RedGreen(weight), spec).eval()


def test_a_hand_worked_table_of_contributions_shares_and_flags(tmp_path):
    """Class a: mean red (16+32)/2/64 = 0.375, mean green 0.625; weights (0.5, 2.0): green 1.25 >
    red 0.1875, so green ranks first; its maps lie wholly off the object (share 1 > area
    (48+32)/2/64 = 0.625): spurious. Class b: red 0.5, green 0.5; weights (3.0, 0.1): red 1.5
    first, share 0 (not spurious); green 0.05 second, share 1 > area (48+16)/2/64 = 0.5."""
    data = _red_green_data(tmp_path / "rg")
    model = _hand_model([[0.5, 2.0], [3.0, 0.1]])
    result = run_measure(FEATURES, model, data, FeaturesConfig(top_features=2, top_images=2, group_by="label"),
                            progress=False)
    got = [(r.class_index, r.rank, r.feature) + tuple(round(v, 6) for v in (r.contribution, r.bg_share, r.bg_area))
           + (r.spurious, json.loads(r.top_images)) for r in result.rows]
    assert got == [
        (0, 1, 1, 1.25, 1.0, 0.625, 1, ["a/i0", "a/i1"]),  # green: 48/64 on i0 before 32/64 on i1
        (0, 2, 0, 0.1875, 0.0, 0.625, 0, ["a/i1", "a/i0"]),
        (1, 1, 0, 1.5, 0.0, 0.5, 0, ["b/i1", "b/i0"]),
        (1, 2, 1, 0.05, 1.0, 0.5, 1, ["b/i0", "b/i1"]),
    ]
    s = result.summary()
    assert (s.bg_share, s.bg_area, s.spurious) == pytest.approx((0.5, 0.5625, 2))
    top = s.top_spurious
    assert (top["class"], top["feature"], top["contribution"]) == ("a", 1, pytest.approx(1.25))
    # a fixed threshold instead: 1.0 is not exceeded by a share of 1.0; 0.9 is
    strict = run_measure(FEATURES, model, data, FeaturesConfig(top_features=2, top_images=2, group_by="label",
                                                        threshold=1.0), progress=False)
    assert [r.spurious for r in strict.rows] == [0, 0, 0, 0]
    loose = run_measure(FEATURES, model, data, FeaturesConfig(top_features=2, top_images=2, group_by="label",
                                                       threshold=0.9), progress=False)
    assert [r.spurious for r in loose.rows] == [1, 0, 0, 1]


def test_prediction_grouping_follows_the_predicted_class(tmp_path):
    """Weights that make every image predicted as class b (row b dominates): class a has no
    images, so no features; class b holds all four images (Salient ImageNet groups by prediction).
    Its top feature is green (mean (48+32+48+16)/4/64 = 0.5625 > red's 0.4375, equal weights); by
    green activation a/i0 and b/i0 (48/64) tie and keep the dataset's order, then a/i1, b/i1."""
    data = _red_green_data(tmp_path / "rg")
    model = _hand_model([[0.0, 0.0], [5.0, 5.0]])
    result = run_measure(FEATURES, model, data, FeaturesConfig(top_features=1, top_images=4), progress=False)
    assert [(r.class_index, r.feature, r.images) for r in result.rows] == [(1, 1, 4)]
    assert result.rows[0].contribution == pytest.approx(5 * 0.5625)
    assert json.loads(result.rows[0].top_images) == ["a/i0", "b/i0", "a/i1", "b/i1"]


def test_a_stored_run_summarises_like_the_fresh_one(tmp_path):
    data = _red_green_data(tmp_path / "rg")
    result = run_measure(FEATURES, _hand_model([[0.5, 2.0], [3.0, 0.1]]), data,
                            FeaturesConfig(top_features=2, top_images=2, group_by="label"), progress=False)
    with Store(tmp_path / "r.db") as store:
        run_id = bgbench.record(result, store)
        stored = FEATURES.read(store, run_id)
        metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
    assert stored.to_dict() == result.summary().to_dict()
    assert metrics[("features_bg_share", "")] == pytest.approx(0.5)
    assert metrics[("features_spurious", "")] == 2 and metrics[("features_bg_share", "b")] == pytest.approx(0.5)
    assert metrics[("features_top_spurious_bg_share", "")] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------------
# the shares' shortcut against maps upsampled with cv2 (Salient ImageNet's resize)


@pytest.mark.parametrize("grid,image", [((1, 1), (8, 8)), ((2, 2), (64, 64)), ((3, 5), (24, 40)), ((7, 7), (50, 37))])
def test_background_shares_equal_those_of_cv2_upsampled_maps(grid, image):
    gen = torch.Generator().manual_seed(sum(grid) + sum(image))
    maps = torch.randn(3, 4, *grid, generator=gen)
    maps[0, 1] = 0  # a map that is zero everywhere
    maps[1, 2] = -1  # ... or negative everywhere (ReLU'd to zero)
    masks = (torch.rand(3, *image, generator=gen) > 0.7).float()
    got = background_shares(maps, masks).numpy()
    for n in range(3):
        for d in range(4):
            a = np.maximum(maps[n, d].numpy(), 0)
            if a.max() <= 0:
                assert np.isnan(got[n, d])
                continue
            nam = cv2.resize((a / a.max()).astype(np.float32), (image[1], image[0]), interpolation=cv2.INTER_LINEAR)
            off = 1 - masks[n].numpy()
            assert got[n, d] == pytest.approx(float((nam * off).sum() / nam.sum()), abs=1e-5)


# ------------------------------------------------------------------------------------------------
# a real timm model: Salient ImageNet's ranking and the shares recomputed with plain torch and cv2


@pytest.fixture(scope="module")
def synth96(tmp_path_factory):
    """Synthetic-9 at 96 px: test_resnet's last feature map is 3x3 there (bilinear edges matter)."""
    from bgbench.variants.synth import write_dataset
    root = tmp_path_factory.mktemp("synth96")
    write_dataset(root, per_class=2, size=96, seed=3, split="val", progress=False)
    return root


def _oracle(model, root, group_by, k, n):
    """Salient ImageNet's `topk_predictive_features` (mean over the group of features x the class's
    weights), the top images by activation, and the maps' shares with cv2, from scratch."""
    paths = sorted((root / "original" / "val").rglob("*.png"))
    ids = [p.relative_to(root / "original" / "val").with_suffix("").as_posix() for p in paths]
    classes = sorted(p.name for p in (root / "original" / "val").iterdir())
    labels = np.array([classes.index(i.split("/")[0]) for i in ids])
    x = torch.from_numpy(np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths])).permute(0, 3, 1, 2) / 255
    masks = np.stack([np.load(root / "fg_mask" / "val" / f"{i}.npy") > 0 for i in ids])
    net = model.net
    mean, std = torch.tensor(model.spec.mean).view(1, 3, 1, 1), torch.tensor(model.spec.std).view(1, 3, 1, 1)
    with torch.no_grad():
        fmap = net.forward_features((x - mean) / std).numpy()
        logits = net((x - mean) / std).numpy()
    feats = fmap.mean(axis=(2, 3))
    weight = net.fc.weight.detach().numpy()
    groups = logits.argmax(axis=1) if group_by == "prediction" else labels
    want = []
    for c in sorted(set(groups.tolist())):
        members = np.flatnonzero(groups == c)
        importance = np.mean(feats[members] * weight[c:c + 1], axis=0)
        for rank, j in enumerate(np.argsort(-importance)[:k], start=1):
            top = members[np.argsort(-feats[members, j])[:n]]
            shares = []
            for i in top:
                a = fmap[i, j] / fmap[i, j].max()
                nam = cv2.resize(a, (x.shape[3], x.shape[2]))
                shares.append(float((nam * ~masks[i]).sum() / nam.sum()))
            want.append((int(c), rank, int(j), float(importance[j]), [ids[i] for i in top], float(np.mean(shares)),
                         float(np.mean([(~masks[i]).mean() for i in top]))))
    return want


@pytest.mark.parametrize("group_by", ["prediction", "label"])
def test_salient_imagenet_ranking_and_shares_recomputed_on_a_timm_model(synth96, group_by):
    model = bgbench.load_model("timm:test_resnet")
    result = run_measure(FEATURES, model, synth96, FeaturesConfig(top_features=3, top_images=2, group_by=group_by,
                                                           batch_size=7), progress=False)
    want = _oracle(model, synth96, group_by, 3, 2)
    got = [(r.class_index, r.rank, r.feature, r.contribution, json.loads(r.top_images), r.bg_share, r.bg_area)
           for r in result.rows]
    assert [g[:3] for g in got] == [w[:3] for w in want]
    assert [g[4] for g in got] == [w[4] for w in want]
    for g, w in zip(got, want):
        assert g[3] == pytest.approx(w[3], rel=1e-4, abs=1e-7)
        assert g[5] == pytest.approx(w[5], abs=1e-5) and g[6] == pytest.approx(w[6], abs=1e-9)
    assert result.config["pooled_is_map_mean"] is True
    assert result.provenance.kind == "probe_features"


# ------------------------------------------------------------------------------------------------
# refusals and the command line


class _NoHead(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3))[:, :2]


class _SquaredHead(_RedGreen):
    def forward_head(self, f, pre_logits=False):
        pooled = f.mean(dim=(2, 3))
        return pooled if pre_logits else self.fc(pooled) ** 2


def test_models_it_cannot_read_are_refused_in_one_line(tmp_path):
    data = _red_green_data(tmp_path / "rg")
    spec = ModelSpec(name="plain", arch="hand", num_classes=2, mean=(0, 0, 0), std=(1, 1, 1))
    with pytest.raises(BgbenchError, match="needs a timm model"):
        run_measure(FEATURES, BgModel(_NoHead(), spec), data, FeaturesConfig(), progress=False)
    squared = BgModel(_SquaredHead([[1.0, 2.0], [3.0, 4.0]]), spec).eval()
    with pytest.raises(BgbenchError, match="not its linear head"):
        run_measure(FEATURES, squared, data, FeaturesConfig(), progress=False)
    for bad, needle in (({"top_features": 0}, "--top-features"), ({"threshold": 1.5}, "--threshold"),
                        ({"group_by": "guess"}, "--group-by"), ({"galleries": -1}, "--galleries")):
        with pytest.raises(BgbenchError, match=needle):
            FeaturesConfig(**bad)


def test_a_1000_class_model_cannot_group_by_label(tmp_path, monkeypatch):
    import bgbench.models.spec as spec_module
    monkeypatch.setattr(spec_module, "check_compatible", lambda *a: None)  # the 2-class data is not IN-9's
    spec = ModelSpec(name="wide", arch="hand", num_classes=1000, label_space="imagenet1k")
    model = BgModel(_RedGreen([[0.0, 0.0]] * 1000), spec)
    with pytest.raises(BgbenchError, match="--group-by label"):
        run_measure(FEATURES, model, _red_green_data(tmp_path / "rg"), FeaturesConfig(group_by="label"), progress=False)


def test_probe_features_cli_writes_beside_the_store_and_records(synth_root, tmp_path, monkeypatch):
    db = tmp_path / "store" / "r.db"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    proc = run_cli("probe", "features", "--model", "timm:test_resnet", "--data", synth_root, "--quiet", "--json",
                   "--db", db, "--top-features", "2", "--top-images", "3", "--galleries", "2")
    assert proc.returncode == 0, proc.stderr
    doc = _strict_json(proc.stdout)
    assert list(cwd.iterdir()) == []  # nothing in the current folder
    folders = sorted((tmp_path / "store").glob("probe_features_*"))
    assert len(folders) == 1 and doc["folder"] == str(folders[0])
    assert len(doc["galleries"]) == 2 and all((folders[0] / p).is_file() for p in doc["galleries"].values())
    with Store(db) as store:
        run = store.runs("probe_features")[-1]
        rows = store.probe_rows("probe_features", run["id"])
        outputs = json.loads(run["outputs"])
    assert outputs["galleries"] == doc["galleries"] and len(rows) == 2 * len(doc["per_class"])
    assert all(len(json.loads(r["top_images"])) == min(3, r["images"]) for r in rows)
    listing = _strict_json(run_cli("runs", "--json", "--db", db, "--kind", "probe_features").stdout)
    assert listing[0]["result"].startswith("features_bg_share=")
    again = run_cli("probe", "features", "--model", "timm:test_resnet", "--data", synth_root, "--quiet",
                    "--db", db, "--galleries", "0")
    assert again.returncode == 0 and "spurious candidates" in again.stdout
    assert len(list((tmp_path / "store").glob("probe_features_*"))) == 1  # no galleries: no new folder
    for argv, needle in ((("--top-images", "0"), "--top-images"), (("--threshold", "nan"), "--threshold")):
        assert_one_line_error(run_cli("probe", "features", "--model", "timm:test_resnet", "--data", synth_root,
                                      "--db", db, *argv), needle)


@pytest.mark.parametrize("panels", [1, 2, 5])
def test_a_gallerys_title_and_captions_lie_inside_its_figure(tmp_path, monkeypatch, panels):
    """A long class name on a class of few images: the title is wrapped inside the figure (it was one
    line wider than the figure, cut at both ends), above the mosaic, and every caption is inside too.
    The figure is the one written, caught as it is saved; its text measured by matplotlib's renderer."""
    from matplotlib.figure import Figure
    from bgbench.measures.features.gallery import GalleryRow, write_gallery
    saved = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (saved.append(fig), original(fig, *a, **k))[1])
    rng = np.random.default_rng(0)
    rows = [GalleryRow(f"#{r + 1} feature {1000 + r}  SPURIOUS?\ncontribution +0.123\nbg share 0.80 (area 0.65)",
                       [(rng.random((96, 96, 3)), rng.random((3, 3)), np.zeros((96, 96), bool))] * panels)
            for r in range(3)]
    title = ("bobsled, bobsleigh, bob (450): top 3 features by contribution to its logit, each on its "
             f"{panels} most activating images; object mask outlined in white")
    write_gallery(rows, title, tmp_path / "g.png")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = saved[0]
    renderer = FigureCanvasAgg(fig).get_renderer()
    box = fig.bbox
    ax = fig.axes[0]
    texts = list(fig.texts) + list(ax.texts)
    assert any(t.get_text().replace("\n", " ") == title for t in texts)
    for t in texts:
        e = t.get_window_extent(renderer)
        assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, t.get_text()
    head = next(t for t in texts if t.get_text().replace("\n", " ") == title)
    assert head.get_window_extent(renderer).y0 >= ax.get_window_extent(renderer).y1  # above the mosaic
