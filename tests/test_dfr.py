"""Last-layer retraining (`train --recipe dfr`, `linear-probe`) and group datasets.

The head is checked against scikit-learn fitted here on the same cached features (the test's own
StandardScaler and one-vs-rest liblinear LogisticRegression); per-group accuracy against
predictions and group files read here with the csv module; DFR's effect against a shortcut planted
in the features, with the direction asserted and the numbers computed by the run."""
import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from bgbench.data.resolve import resolve_layout
from bgbench.models import create_model
from bgbench.store import Store
from bgbench.training.dfr import fit_head
from conftest import assert_one_line_error, run_cli
from helpers.group_trees import groups_tree, waterbirds_tree

ARCH = "timm:test_resnet"


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


#: Waterbirds-like: the training split is 85% on the bird's own place, val and test balanced.
WATERBIRDS_COUNTS = {"train": {(0, 0): 12, (0, 1): 2, (1, 0): 2, (1, 1): 12},
                     "val": {(0, 0): 6, (0, 1): 6, (1, 0): 6, (1, 1): 6},
                     "test": {(0, 0): 10, (0, 1): 10, (1, 0): 10, (1, 1): 11}}


@pytest.fixture(scope="module")
def waterbirds(tmp_path_factory) -> Path:
    return waterbirds_tree(tmp_path_factory.mktemp("waterbirds"), WATERBIRDS_COUNTS)


def _sklearn_head(x, y, c, seed=0):
    """The test's own DFR head: StandardScaler, then scikit-learn's L1 liblinear logistic regression,
    one-vs-rest, the scaler folded into raw-feature weights."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import StandardScaler
    scaler = StandardScaler().fit(x)
    z = scaler.transform(x)
    lr = OneVsRestClassifier(LogisticRegression(C=c, l1_ratio=1.0, solver="liblinear", random_state=seed)).fit(z, y)
    coef = np.stack([e.coef_[0] for e in lr.estimators_])
    intercept = np.array([e.intercept_[0] for e in lr.estimators_])
    return coef / scaler.scale_, intercept - coef @ (scaler.mean_ / scaler.scale_), lr.predict(z)


def _cached(out: Path, cache: Path):
    head = json.loads((out / "head.json").read_text())
    with np.load(cache / f"{head['feature_cache_key']}.npz") as z:
        return head, [str(i) for i in z["image_ids"]], z["labels"], z["x"].astype(np.float64)


def _classifier(path: Path):
    net = create_model(f"file:{path}").net
    fc = net.get_classifier()
    return fc.weight.detach().double().numpy(), fc.bias.detach().double().numpy()


def _eval(db, model, data, *extra):
    proc = run_cli("eval", "--model", model, "--data", data, "--db", db, "--json", "--quiet", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_linear_probe_is_sklearns_logistic_regression_on_the_cached_features(synth_root, tmp_path):
    """9 classes, no balancing: one fit on every image, at the C chosen on the held-out half."""
    out, cache, db = tmp_path / "probe", tmp_path / "cache", tmp_path / "r.db"
    proc = run_cli("train", "--recipe", "linear-probe", "--model", ARCH, "--data", synth_root, "--out", out,
                   "--feature-cache", cache, "--c-grid", 1, 0.1, "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    head, ids, labels, x = _cached(out, cache)
    assert head["variant"] == "original" and head["split"] == "train" and head["retrains"] == 1
    assert len(ids) == 54 and x.shape == (54, head["features"])
    assert head["c"] in (1.0, 0.1) and head["c"] == max(head["c_grid"], key=lambda c: (
        head["held_out_scores"][str(c)], -head["c_grid"].index(c)))
    w, b, pred = _sklearn_head(x, labels, head["c"])
    mine_w, mine_b = _classifier(out / "model.pt")
    np.testing.assert_allclose(mine_w, w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(mine_b, b, rtol=1e-4, atol=1e-5)
    assert doc["recipe"] == "linear-probe" and doc["c"] == head["c"]
    # the saved model, evaluated on its own training images, gets sklearn's accuracy on the features
    ev = _eval(db, f"file:{out / 'model.pt'}", synth_root, "--split", "train", "--variants", "original")
    assert ev["accuracy"]["original"]["value"] == pytest.approx(float(np.mean(pred == labels)))


def test_dfr_on_balanced_groups_is_sklearns_fit_on_all_of_them(tmp_path):
    """Every group as large as the others: DFR's balanced subsets are the whole set, one fit."""
    data = groups_tree(tmp_path / "g", {(c, f): 6 for c in range(3) for f in range(2)})
    out, cache = tmp_path / "dfr", tmp_path / "cache"
    proc = run_cli("train", "--recipe", "dfr", "--model", ARCH, "--data", data, "--out", out, "--feature-cache",
                   cache, "--db", tmp_path / "r.db", "--quiet")
    assert proc.returncode == 0, proc.stderr
    head, ids, labels, x = _cached(out, cache)
    assert head["split"] == "all" and head["groups"] == 6 and head["retrains"] == 1 and head["images_per_fit"] == 36
    with open(data / "groups.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["image"][:-4] for r in rows] == ids and [int(r["class"][1]) for r in rows] == list(labels)
    w, b, pred = _sklearn_head(x, labels, head["c"])
    mine_w, mine_b = _classifier(out / "model.pt")
    np.testing.assert_allclose(mine_w, w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(mine_b, b, rtol=1e-4, atol=1e-5)
    model = create_model(f"file:{out / 'model.pt'}")
    assert model.spec.class_names == ("c0", "c1", "c2")
    assert model.spec.extra["last_layer"]["backbone"] == ARCH
    ev = _eval(tmp_path / "r.db", f"file:{out / 'model.pt'}", data)
    assert ev["accuracy"]["original"]["value"] == pytest.approx(float(np.mean(pred == labels)))


def _shortcut_features(n_per_group, correlation, rng):
    """Two classes; feature 0 is the class with noise (the core), feature 1 the place, which agrees
    with the class on a share `correlation` of the images (the shortcut), feature 2 is noise."""
    y, place = [], []
    for cls in (0, 1):
        own = int(round(correlation * n_per_group))
        y += [cls] * n_per_group
        place += [cls] * own + [1 - cls] * (n_per_group - own)
    y, place = np.array(y), np.array(place)
    x = np.stack([y + rng.normal(0, 0.6, len(y)), place + rng.normal(0, 0.05, len(y)),
                  rng.normal(0, 1, len(y))], axis=1)
    return x, y, [f"{a} on {b}" for a, b in zip(y, place)]


def test_dfr_recovers_the_worst_group_a_shortcut_head_loses():
    """A head fitted on all of a 95%-correlated set (ERM's last layer) reads the place and fails the
    minority groups; DFR on the same features, group-balanced, reads the core feature."""
    rng = np.random.default_rng(0)
    x, y, groups = _shortcut_features(400, 0.95, rng)
    tx, ty, tgroups = _shortcut_features(400, 0.5, np.random.default_rng(1))  # a balanced test set
    erm = fit_head(x, y, groups, 2, balance=False, c_grid=(1.0,), seed=0)
    dfr = fit_head(x, y, groups, 2, balance=True, seed=0)

    def worst(fit):
        pred = np.argmax(tx @ fit.weight.T + fit.bias, axis=1)
        return min(np.mean(pred[np.array(tgroups) == g] == ty[np.array(tgroups) == g]) for g in set(tgroups))
    erm_worst, dfr_worst = worst(erm), worst(dfr)
    assert dfr_worst > erm_worst + 0.2, (erm_worst, dfr_worst)
    assert abs(dfr.weight[1, 0]) > abs(dfr.weight[1, 1])  # DFR's head leans on the core feature
    assert abs(erm.weight[1, 1]) > abs(erm.weight[1, 0])  # ERM's on the place
    assert dfr.retrains == 10 and dfr.fitted_on == 2 * 2 * 20  # 4 groups, balanced to the smallest (20)


def test_a_waterbirds_tree_is_read_and_evaluated_by_group(waterbirds, tmp_path):
    layout = resolve_layout(waterbirds)
    assert layout.classes == ("landbird", "waterbird") and layout.split == "test"
    assert len(layout.items("original")) == 41
    assert len(resolve_layout(waterbirds, split="train").items("original")) == 28
    db, out = tmp_path / "r.db", tmp_path / "dfr"
    proc = run_cli("train", "--recipe", "dfr", "--model", ARCH, "--data", waterbirds, "--split", "val", "--out", out,
                   "--feature-cache", "none", "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    ev = _eval(db, f"file:{out / 'model.pt'}", waterbirds)
    groups = ev["groups"]["original"]
    with open(waterbirds / "metadata.csv", newline="") as f:  # the groups, read here
        meta = {r["img_filename"][:-4]: (int(r["y"]), int(r["place"])) for r in csv.DictReader(f) if r["split"] == "2"}
    with Store(db) as store:
        rows = store.predictions(ev["run_id"], "original")
    expected = {}
    for r in rows:
        y, place = meta[r["image_id"]]
        name = f"{('landbird', 'waterbird')[y]} on {('land', 'water')[place]}"
        k, n = expected.get(name, (0, 0))
        expected[name] = (k + int(r["pred"] == r["label"]), n + 1)
    assert {g["group"]: (g["correct"], g["n"]) for g in groups["groups"]} == expected
    assert groups["worst_group"]["acc"] == min(k / n for k, n in expected.values())
    assert groups["mean_group_accuracy"] == pytest.approx(np.mean([k / n for k, n in expected.values()]))
    assert all(g["lo"] <= g["acc"] <= g["hi"] for g in groups["groups"])
    text = run_cli("eval", "--model", f"file:{out / 'model.pt'}", "--data", waterbirds, "--db", db, "--quiet").stdout
    assert "worst group:" in text and "waterbird on land" in text
    with Store(db) as store:
        names = {m["name"] for m in store.metrics(ev["run_id"])}
    assert {"worst_group_accuracy", "mean_group_accuracy"} <= names
    stored = run_cli("analyze", "groups", ev["run_id"], "--db", db, "--json")  # the stored run, regrouped
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["groups"] == groups["groups"]
    assert run_cli("report", "--db", db, "--out", tmp_path / "report", "--quiet").returncode == 0
    html = (tmp_path / "report" / "index.html").read_text()
    assert 'class="section-groups"' in html and "<td>waterbird on land</td>" in html
    overview = html[html.index('class="section-overview"'):html.index('class="section-', html.index(
        'class="section-overview"') + 1)]
    w = groups["worst_group"]
    assert "worst group</th>" in overview  # the Models table's column, the stored metric with its interval
    text = " ".join(re.sub(r"<[^>]+>", " ", overview).split())
    assert f"{100 * w['acc']:.1f}% [{100 * w['lo']:.1f}%, {100 * w['hi']:.1f}%]" in text


def test_bad_group_files_are_one_line_errors(waterbirds, tmp_path):
    missing = tmp_path / "missing"
    shutil.copytree(waterbirds, missing)
    with open(missing / "metadata.csv", newline="") as f:  # an image of the split eval reads (test)
        gone = missing / next(r["img_filename"] for r in csv.DictReader(f) if r["split"] == "2")
    gone.unlink()
    assert_one_line_error(run_cli("eval", "--model", ARCH, "--data", missing, "--quiet"), "metadata.csv", gone.name)
    # a group with no images in the split read
    empty = groups_tree(tmp_path / "empty", {(0, 0): 2, (1, 1): 2}, split="test")
    with open(empty / "groups.csv", "a", newline="") as f:
        f.write("img/0000.png,c0,c0 on f1,train\n")
    assert_one_line_error(run_cli("train", "--recipe", "dfr", "--model", ARCH, "--data", empty, "--split", "test",
                                  "--out", tmp_path / "o", "--quiet"), "c0 on f1", "no images", "test")
    nosplit = groups_tree(tmp_path / "nosplit", {(0, 0): 2})
    assert_one_line_error(run_cli("eval", "--model", ARCH, "--data", nosplit, "--split", "val", "--quiet"),
                          "no split column")
    (tmp_path / "cols").mkdir()
    (tmp_path / "cols" / "groups.csv").write_text("image,label\na.png,x\n")
    assert_one_line_error(run_cli("eval", "--model", ARCH, "--data", tmp_path / "cols", "--quiet"), "class", "group")
    assert_one_line_error(run_cli("train", "--data", waterbirds, "--model", ARCH, "--out", tmp_path / "full",
                                  "--quiet"), "group dataset", "--recipe dfr")


def test_a_model_without_a_penultimate_layer_and_misused_flags_are_one_line_errors(synth_root, tmp_path):
    from bgbench.models.spec import BgModel, ModelSpec
    import timm
    net = timm.create_model("test_resnet", num_classes=9).eval()
    wrapped = BgModel(net, ModelSpec(name="x", arch="test_resnet", num_classes=9))
    torch.export.save(torch.export.export(wrapped.eval(), (torch.rand(1, 3, 32, 32),)), str(tmp_path / "m.pt2"))
    assert_one_line_error(run_cli("train", "--recipe", "dfr", "--model", f"file:{tmp_path / 'm.pt2'}", "--norm",
                                  "none", "--data", synth_root, "--out", tmp_path / "o", "--quiet"),
                          "no penultimate layer")
    assert not (tmp_path / "o" / "model.pt").exists()
    assert_one_line_error(run_cli("train", "--recipe", "dfr", "--data", synth_root, "--out", tmp_path / "o",
                                  "--quiet"), "--model")
    assert_one_line_error(run_cli("train", "--recipe", "dfr", "--model", ARCH, "--epochs", 3, "--data", synth_root,
                                  "--out", tmp_path / "o", "--quiet"), "--epochs", "last layer")
    assert_one_line_error(run_cli("train", "--model", ARCH, "--c-grid", 1, "--data", synth_root, "--out",
                                  tmp_path / "o", "--quiet"), "--c-grid", "whole network")


def test_dfr_on_in9_layout_fits_mixed_rand_by_manifest_groups_and_reruns_as_a_no_op(synth_root, tmp_path):
    out, cache, db = tmp_path / "dfr", tmp_path / "cache", tmp_path / "r.db"
    args = ["train", "--recipe", "dfr", "--model", ARCH, "--data", synth_root, "--out", out, "--feature-cache", cache,
            "--retrains", 3, "--db", db, "--quiet"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    head = json.loads((out / "head.json").read_text())
    with open(synth_root / "manifest.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["folder"] == "mixed_rand" and r["split"] == "train"]
    pairs = {(r["image"].split("/")[0], r["bg_class"]) for r in rows}
    assert head["variant"] == "mixed_rand" and head["images"] == len(rows) == 54
    assert head["groups"] == len(pairs)
    before = (out / "model.pt").stat().st_mtime_ns
    again = run_cli(*args[:-1], "--batch-size", 5)  # the batch size does not change the head
    assert again.returncode == 0 and "already holds this head" in again.stderr
    assert (out / "model.pt").stat().st_mtime_ns == before
    assert_one_line_error(run_cli(*args[:-3], "--retrains", 4, "--quiet"), "retrains", "another --out")
    ev = _eval(db, f"file:{out / 'model.pt'}", synth_root)
    assert set(ev["groups"]) == {"mixed_rand"}  # ORIGINAL's backgrounds are only recorded by --correlation
    runs = run_cli("runs", "--db", db, "--json")
    kinds = [r["kind"] for r in json.loads(runs.stdout)]
    assert kinds.count("train") == 1  # the rerun recorded nothing new
    # the training run is listed with the backbone it started from and the head's file and sha256
    (train,) = [r for r in json.loads(runs.stdout) if r["kind"] == "train"]
    sha = hashlib.sha256((out / "model.pt").read_bytes()).hexdigest()
    assert train["model_label"] == f"{ARCH} -> file:{out / 'model.pt'} [sha256 {sha[:8]}]"


@pytest.mark.parametrize("scheme", ["openclip", "hf"])
def test_dfr_gives_foundation_models_a_head_every_command_loads(scheme, synth_root, tmp_path):
    from helpers.foundation_models import tiny_clip, tiny_vit
    model = f"openclip:{tiny_clip(tmp_path / 'clip')}" if scheme == "openclip" else \
        f"hf:{tiny_vit(tmp_path / 'vit', image_size=32, num_labels=1000)}"
    out, cache, db = tmp_path / "dfr", tmp_path / "cache", tmp_path / "r.db"
    proc = run_cli("train", "--recipe", "linear-probe", "--model", model, "--data", synth_root, "--split", "val",
                   "--out", out, "--feature-cache", cache, "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    head, ids, labels, x = _cached(out, cache)
    loaded = create_model(f"file:{out / 'model.pt'}")
    assert loaded.spec.num_classes == 9 and loaded.spec.extra["last_layer"]["backbone"] == model
    w, b = (torch.tensor(np.asarray(v)) for v in _head_of(loaded))
    expected = np.argmax(x @ w.double().numpy().T + b.double().numpy(), axis=1)
    ev = _eval(db, f"file:{out / 'model.pt'}", synth_root, "--variants", "original")
    with Store(db) as store:
        got = {r["image_id"]: r["pred"] for r in store.predictions(ev["run_id"], "original")}
    assert [got[i] for i in ids] == list(expected)  # eval's forward = the cached features through the new head


def _head_of(model):
    net = model.net
    if hasattr(net, "head_bias"):
        return net.head.numpy(), net.head_bias.numpy()
    fc = net.model.classifier
    return fc.weight.detach().numpy(), fc.bias.detach().numpy()


def test_synth_correlation_plants_minority_groups_and_writes_them(tmp_path):
    from bgbench.data.manifest import image_groups
    out = tmp_path / "s9"
    proc = run_cli("synth", "--out", out, "--size", 16, "--per-class", 8, "--split", "train", "--correlation", 0.75,
                   "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    with open(out / "manifest.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["folder"] == "original"]
    own = sum(r["image"].split("/")[0] == r["bg_class"] for r in rows)
    assert len(rows) == 72 and own == 9 * 6  # round(0.75 x 8) = 6 per class on their own family
    minority = {(r["image"].split("/")[0], r["bg_class"]) for r in rows if r["image"].split("/")[0] != r["bg_class"]}
    assert len(minority) == 9 * 2  # the other 2 of each class on 2 different families
    groups = image_groups(resolve_layout(out, split="train"), "original")
    assert set(groups.values()) == {(r["image"].split("/")[0], r["bg_class"]) for r in rows}
    both = run_cli("synth", "--out", tmp_path / "x", "--correlation", 0.5, "--bg-correlation", 0.5)
    assert both.returncode == 2 and "not allowed with argument --correlation" in both.stderr  # argparse's own
    assert_one_line_error(run_cli("synth", "--out", tmp_path / "x", "--correlation", 1.5), "--correlation")
