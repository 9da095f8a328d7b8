"""Waterbirds read as the WILDS release lays it out and scored as `wilds` scores it, held to the `wilds`
PyPI package itself on a generated tree in the release layout (CUB species folders with their real
bird type, `metadata.csv` with the release's columns, `RELEASE_v1.0.txt`).

- Which images, labels and places: `wilds/datasets/waterbirds_dataset.py` (`WaterbirdsDataset`:
  its `_input_array`, `y_array`, `metadata_array`, `split_array` and `split_dict`).
- The scores: `WaterbirdsDataset.eval` (`adj_acc_avg`, `acc_wg`, each group's `acc_y:..._background:...`)
  over `wilds/datasets/wilds_dataset.py`'s `standard_group_eval` and `wilds/common/metrics`, fed
  bgbench's stored predictions.
- DFR on it: `dfr_evaluate_spurious.py` of PolinaKirichenko/deep_feature_reweighting (`dfr_on_validation_tune`,
  `dfr_on_validation_eval`), written out in `dfr_repo_oracle` from its definitions.

wilds averages over groups with `torch_scatter.scatter(..., reduce='mean')` (`wilds/common/utils.py`,
`avg_over_groups`), a compiled extension with no wheel for this torch; where it is missing, the test
puts in its place `scatter_mean`, written here from torch_scatter's documented definition (the mean of
`src` over the entries of each index, 0 where an index has none). Everything else is wilds' own code.
"""
import csv
import json
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import bgbench
from bgbench.data.resolve import dataset_classes, resolve_layout
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli
from helpers.group_trees import RELEASE_FOLDER, SPECIES, waterbirds_tree

from wilds.datasets import waterbirds_dataset as wilds_waterbirds  # noqa: E402 (the package held to)

#: Like the release: the training split mostly on the bird's own place, val and test balanced by place.
COUNTS = {"train": {(0, 0): 14, (0, 1): 3, (1, 0): 2, (1, 1): 9},
          "val": {(0, 0): 7, (0, 1): 7, (1, 0): 5, (1, 1): 5},
          "test": {(0, 0): 12, (0, 1): 12, (1, 0): 6, (1, 1): 6}}
SPLITS = ("train", "val", "test")
#: Seeds of `bird_model` that are right on some images of every group and wrong on others.
MIXED_SEEDS = (4, 6)


def scatter_mean(src, index, dim=-1, dim_size=None, reduce="mean", **_):
    """torch_scatter.scatter with reduce='mean' on 1-d input: out[i] = mean of src[j] over j with
    index[j] == i, 0 for an i that no j names."""
    assert reduce == "mean" and src.dim() == 1
    size = int(dim_size if dim_size is not None else int(index.max()) + 1)
    sums = torch.zeros(size, dtype=src.dtype).index_add_(0, index, src)
    counts = torch.zeros(size, dtype=src.dtype).index_add_(0, index, torch.ones_like(src))
    return torch.where(counts > 0, sums / counts.clamp(min=1), torch.zeros_like(sums))


@pytest.fixture(autouse=True)
def _torch_scatter(monkeypatch):
    try:
        import torch_scatter  # noqa: F401
    except ImportError:
        monkeypatch.setitem(sys.modules, "torch_scatter", types.SimpleNamespace(scatter=scatter_mean))


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """WILDS' root_dir: `waterbirds_v1.0/` with metadata.csv, RELEASE_v1.0.txt and the images."""
    return waterbirds_tree(tmp_path_factory.mktemp("wilds"), COUNTS, size=24, release=True)


def wilds_dataset(root: Path):
    return wilds_waterbirds.WaterbirdsDataset(root_dir=str(root), download=False)


def wilds_split(ds, split: str):
    """(path, y, place) of each image of a split, in wilds' order."""
    idx = np.flatnonzero(ds.split_array == ds.split_dict[split])
    return [(Path(ds.data_dir, ds._input_array[i]).resolve(), int(ds.y_array[i]), int(ds.metadata_array[i, 0]))
            for i in idx], idx


def test_the_release_is_read_as_wilds_reads_it(release):
    ds = wilds_dataset(release)
    assert ds.metadata_fields[:2] == ["background", "y"]
    for data in (release, release / RELEASE_FOLDER):  # WILDS' root_dir, or its waterbirds_v1.0/ folder
        for split in SPLITS:
            layout = resolve_layout(data, split=split)
            assert layout.kind == "waterbirds" and layout.classes == ("landbird", "waterbird")
            assert layout.root == release  # WILDS' root_dir, however it was named
            ours = sorted((it.path.resolve(), it.label, layout.places[it.image_id]) for it in layout.items("original"))
            theirs, _ = wilds_split(ds, split)
            assert ours == sorted(theirs) and len(ours) == sum(COUNTS[split].values())
            # the bird type is the species' own: landbird folders hold y=0, waterbird folders y=1
            assert all(it.path.parent.name in SPECIES[it.label] for it in layout.items("original"))
    assert resolve_layout(release).split == "test"  # the evaluation split unless named
    assert dataset_classes(release) == ("landbird", "waterbird")  # what a zero-shot head is built over


class ChannelLinear(nn.Module):
    """Two logits from the image's channel means: right on some images of each group, wrong on others."""

    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.lin = nn.Linear(3, 2)
        with torch.no_grad():
            self.lin.weight.copy_(30 * torch.randn(2, 3, generator=g))
            self.lin.bias.copy_(torch.randn(2, generator=g))

    def forward(self, x):
        return self.lin(x.mean(dim=(2, 3)))


def bird_model(seed: int) -> BgModel:
    spec = ModelSpec(name=f"toy:birds{seed}", arch="toy", num_classes=2, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0),
                     class_names=("landbird", "waterbird"))
    return BgModel(ChannelLinear(seed), spec).eval()


def wilds_eval(ds, split: str, pred_of: dict, root: Path) -> dict:
    """`WaterbirdsDataset.eval` on a split, each image answered with bgbench's stored prediction."""
    images, idx = wilds_split(ds, split)
    ids = [p.relative_to(root.resolve()).with_suffix("").as_posix() for p, _, _ in images]
    y_pred = torch.tensor([pred_of[i] for i in ids], dtype=torch.long)
    results, _ = ds.eval(y_pred, ds.y_array[idx], ds.metadata_array[idx])
    return results


def test_eval_scores_are_wilds_eval(release, tmp_path, one_thread):
    ds = wilds_dataset(release)
    db = tmp_path / "r.db"
    seen = set()
    for seed in MIXED_SEEDS:
        report = bgbench.evaluate(bird_model(seed), release, progress=False)
        run_id = bgbench.record(report, db)
        with Store(db) as store:
            stored = {(m["name"], m["variant"]): m for m in store.metrics(run_id)}
            pred_of = {r["image_id"]: r["pred"] for r in store.predictions(run_id, "original")}
        theirs = wilds_eval(ds, "test", pred_of, release / RELEASE_FOLDER)
        adj, wg = stored[("adj_acc_avg", "original")], stored[("acc_wg", "original")]
        assert adj["value"] == pytest.approx(theirs["adj_acc_avg"], abs=1e-6)
        assert wg["value"] == pytest.approx(theirs["acc_wg"], abs=1e-6)
        assert adj["lo"] <= adj["value"] <= adj["hi"] and wg["lo"] <= wg["value"] <= wg["hi"]
        for g in report.waterbirds.groups:  # each group's accuracy and count under wilds' own key
            key = f"y:{('landbird', 'waterbird')[g['y']]}_background:{('land', 'water')[g['place']]}"
            assert g["acc"] == pytest.approx(theirs[f"acc_{key}"], abs=1e-6) and g["n"] == theirs[f"count_{key}"]
        # the weighting matters: the plain test accuracy (wilds' dropped acc_avg) is another number
        assert "acc_avg" not in theirs
        assert abs(stored[("accuracy", "original")]["value"] - theirs["adj_acc_avg"]) > 1e-3
        assert 0 < theirs["acc_wg"] < theirs["adj_acc_avg"] < 1
        seen.add(round(theirs["acc_wg"], 6))
        doc = report.to_dict()["waterbirds"]
        assert json.loads(json.dumps(doc)) == doc and doc["worst_group"] in report.text()
    assert len(seen) == len(MIXED_SEEDS)  # the models differ, and so do their worst groups


#: Images per group, (y, place) = (0, 0), (0, 1), (1, 0), (1, 1): empty groups and lone images among them.
GROUP_SIZES = [(12, 3, 2, 9), (0, 7, 5, 5), (4, 0, 1, 6), (1, 1, 1, 1), (30, 2, 0, 17), (5, 5, 5, 0)]


@pytest.mark.parametrize("seed, sizes", enumerate(GROUP_SIZES))
def test_the_scores_are_wilds_on_any_predictions(release, seed, sizes):
    """Random answers on groups of any size, down to one image and none (wilds' accuracy 0 in the
    weighted average, and no worst group there)."""
    from bgbench.measures.eval.waterbirds import waterbirds_score
    ds = wilds_dataset(release)
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 0, 1, 1], sizes)
    place = np.repeat([0, 1, 0, 1], sizes)
    correct = rng.random(len(y)) < rng.random()
    pred = np.where(correct, y, 1 - y)
    results, _ = ds.eval(torch.tensor(pred), torch.tensor(y), torch.stack([torch.tensor(place), torch.tensor(y)], 1))
    ours = waterbirds_score(pred == y, y, place, n_boot=50)
    assert ours.adj_acc_avg.value == pytest.approx(results["adj_acc_avg"], abs=1e-6)
    assert ours.acc_wg.value == pytest.approx(results["acc_wg"], abs=1e-6)


def test_the_scorecard_shows_wilds_figures_on_waterbirds(release, tmp_path, one_thread):
    """On Waterbirds' data the scorecard's eval columns are wilds' two figures, the same stored numbers."""
    db = tmp_path / "r.db"
    report = bgbench.evaluate(bird_model(MIXED_SEEDS[0]), release, progress=False)
    run_id = bgbench.record(report, db)
    proc = run_cli("report", "--db", db, "--out", tmp_path / "report", "--quiet")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "report" / "index.html").read_text()
    assert ">average acc. &uarr;</th>" in html and ">worst-group acc. &uarr;</th>" in html
    assert ">clean &uarr;</th>" not in html  # the plain test accuracy is not Waterbirds' average
    assert "average accuracy (wilds&#39; adj_acc_avg)" in html  # and in eval's section, beside the variants
    w = report.waterbirds
    assert f"{100 * w.adj_acc_avg.value:.1f}%" in html and f"{100 * w.acc_wg.value:.1f}%" in html
    with Store(db) as store:
        names = {m["name"] for m in store.metrics(run_id)}
    assert {"adj_acc_avg", "acc_wg"} <= names
    regrouped = run_cli("analyze", "groups", run_id, "--db", db, "--json")  # the stored run, from WILDS' root_dir
    assert regrouped.returncode == 0, regrouped.stderr
    assert {g["group"]: g["n"] for g in json.loads(regrouped.stdout)["groups"]} == {
        g["group"]: g["n"] for g in w.groups}


def _copy(release: Path, tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(release, root)
    return root


def _rewrite(root: Path, change) -> Path:
    """metadata.csv with `change(rows)` applied; returns the file."""
    path = root / RELEASE_FOLDER / "metadata.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    rows = change(rows)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _first_test(rows):
    return next(k for k, r in enumerate(rows) if r["split"] == "2")


def test_bad_releases_are_one_line_errors_and_nothing_outside_is_read(release, tmp_path):
    def eval_of(root):
        return run_cli("eval", "--model", "timm:test_resnet", "--data", root, "--db", tmp_path / "r.db", "--quiet")

    secret = tmp_path / "secret.jpg"
    shutil.copy(next((release / RELEASE_FOLDER / SPECIES[0][0]).iterdir()), secret)
    leaves = _copy(release, tmp_path, "leaves")

    def outside(rows):
        rows[_first_test(rows)]["img_filename"] = "../../secret.jpg"
        return rows
    _rewrite(leaves, outside)
    assert_one_line_error(eval_of(leaves), "../../secret.jpg", "outside the dataset root")
    absolute = _copy(release, tmp_path, "absolute")

    def absolute_path(rows):
        rows[_first_test(rows)]["img_filename"] = str(secret)
        return rows
    _rewrite(absolute, absolute_path)
    assert_one_line_error(eval_of(absolute), str(secret), "outside the dataset root")
    linked = _copy(release, tmp_path, "linked")
    with open(linked / RELEASE_FOLDER / "metadata.csv", newline="") as f:
        first = next(r["img_filename"] for r in csv.DictReader(f) if r["split"] == "2")
    (linked / RELEASE_FOLDER / first).unlink()
    (linked / RELEASE_FOLDER / first).symlink_to(secret)
    assert_one_line_error(eval_of(linked), first, "outside the dataset root")
    missing = _copy(release, tmp_path, "missing")
    (missing / RELEASE_FOLDER / first).unlink()
    assert_one_line_error(eval_of(missing), "metadata.csv", first, "not under")
    nocolumn = _copy(release, tmp_path, "nocolumn")
    _rewrite(nocolumn, lambda rows: [{k: v for k, v in r.items() if k != "place"} for r in rows])
    assert_one_line_error(eval_of(nocolumn), "metadata.csv", "needs the columns", "missing: place")
    badsplit = _copy(release, tmp_path, "badsplit")

    def split_three(rows):
        rows[0]["split"] = "3"
        return rows
    _rewrite(badsplit, split_three)
    assert_one_line_error(eval_of(badsplit), "metadata.csv line 2", "split is 0, 1 or 2")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", release, "--split", "holdout",
                                  "--db", tmp_path / "r.db", "--quiet"), "Waterbirds' splits are train, val, test")
    if (tmp_path / "r.db").exists():  # each stopped before any image was read: nothing was predicted or recorded
        with Store(tmp_path / "r.db") as store:
            assert not store.runs()


#: `dfr_evaluate_spurious.py`'s grid for Waterbirds (C_OPTIONS) and its heads averaged (num_retrains).
C_OPTIONS = (1.0, 0.7, 0.3, 0.1, 0.07, 0.03, 0.01)
NUM_RETRAINS = 20


def _logreg(c):
    """The script's head: LogisticRegression(penalty="l1", C=c, solver="liblinear", class_weight 1:1),
    in scikit-learn's current spelling of the L1 penalty; no random_state, so liblinear draws its seed
    from numpy's global state, as in the script."""
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(l1_ratio=1.0, C=c, solver="liblinear", class_weight={0: 1.0, 1: 1.0})


def _balanced_subset(g):
    """The script's balancing: positions of each group 0..max(g), shuffled in place with numpy's global
    state one group after another, each cut to the smallest group's count, concatenated."""
    per_group = [np.where(g == k)[0] for k in range(int(g.max()) + 1)]
    m = min(len(p) for p in per_group)
    for p in per_group:
        np.random.shuffle(p)
    return np.concatenate([p[:m] for p in per_group])


def dfr_repo_oracle(x_train, x_val, y_val, g_val, seed):
    """DFR on validation as `dfr_evaluate_spurious.py` runs it with its defaults (balanced validation,
    no training data added), numpy's global state seeded with `seed` first.

    dfr_on_validation_tune (one pass): shuffle all val indices; the first len // 2 are scored on, the
    rest balanced and fitted on, a StandardScaler fitted on those; per C, the worst group accuracy
    on the scored half; the first C of the grid with the highest wins.
    dfr_on_validation_eval: a StandardScaler fitted on the training features; 20 times: val
    balanced, the training indices shuffled (no training image used), a fit with the chosen C on
    the scaled balanced val; coef_ and intercept_ averaged.
    Returns (C, {C: worst}, coef (D,), intercept, scaler mean, scaler scale)."""
    from sklearn.preprocessing import StandardScaler
    np.random.seed(seed)
    order = np.arange(len(x_val))
    np.random.shuffle(order)
    half = len(x_val) // 2
    scored, fitted = order[:half], order[half:]
    fitted = fitted[_balanced_subset(g_val[fitted])]
    scaler = StandardScaler().fit(x_val[fitted])
    worst = {}
    for c in C_OPTIONS:
        pred = _logreg(c).fit(scaler.transform(x_val[fitted]), y_val[fitted]).predict(scaler.transform(x_val[scored]))
        right = pred == y_val[scored]
        worst[c] = min(right[g_val[scored] == k].mean() for k in range(int(g_val.max()) + 1))
    best = C_OPTIONS[int(np.argmax([worst[c] for c in C_OPTIONS]))]
    scaler = StandardScaler().fit(x_train)
    coefs, intercepts = [], []
    for _ in range(NUM_RETRAINS):
        pick = _balanced_subset(g_val)
        np.random.shuffle(np.arange(len(x_train)))
        head = _logreg(best).fit(scaler.transform(x_val[pick]), y_val[pick])
        coefs.append(head.coef_)
        intercepts.append(head.intercept_)
    return best, worst, np.mean(coefs, axis=0)[0], float(np.mean(intercepts, axis=0)[0]), scaler.mean_, scaler.scale_


def test_dfr_on_the_validation_split_is_the_repositorys(release, tmp_path, one_thread):
    """`train --recipe dfr` on Waterbirds fits on val by default, as `dfr_evaluate_spurious.py` does:
    the same C, the same held-out worst-group accuracies and the same averaged head, its scaler the
    training split's; the saved model evaluates on test with wilds' figures."""
    from bgbench.models import create_model
    out, cache, db = tmp_path / "dfr", tmp_path / "cache", tmp_path / "r.db"
    proc = run_cli("train", "--recipe", "dfr", "--model", "timm:test_resnet", "--data", release, "--out", out,
                   "--feature-cache", cache, "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    head = json.loads((out / "head.json").read_text())
    assert head["split"] == "val" and head["retrains"] == NUM_RETRAINS and head["group_balanced"]
    with open(release / RELEASE_FOLDER / "metadata.csv", newline="") as f:  # (y, place) by image id, read here
        meta = {r["img_filename"].rsplit(".", 1)[0]: (int(r["y"]), int(r["place"]), r["split"])
                for r in csv.DictReader(f)}

    def cached(key):
        with np.load(cache / f"{key}.npz") as z:
            return [str(i) for i in z["image_ids"]], z["x"].astype(np.float64)
    val_ids, x_val = cached(head["feature_cache_key"])
    train_ids, x_train = cached(head["scaler_feature_cache_key"])
    assert {meta[i][2] for i in val_ids} == {"1"} and {meta[i][2] for i in train_ids} == {"0"}
    assert len(train_ids) == sum(COUNTS["train"].values())
    y_val = np.array([meta[i][0] for i in val_ids])
    g_val = np.array([2 * meta[i][0] + meta[i][1] for i in val_ids])  # the script's get_y_p: y * n_places + p
    c, worst, coef, intercept, mean, scale = dfr_repo_oracle(x_train, x_val, y_val, g_val, seed=0)
    assert head["c"] == c and {float(k): v for k, v in head["held_out_scores"].items()} == pytest.approx(worst)
    fc = create_model(f"file:{out / 'model.pt'}").net.get_classifier()
    w, b = fc.weight.detach().double().numpy(), fc.bias.detach().double().numpy()
    # two logits (0, w.x + b): the binary head's decision, on raw features (the scaler folded in)
    np.testing.assert_allclose(w[1] - w[0], coef / scale, rtol=1e-4, atol=1e-6)
    assert b[1] - b[0] == pytest.approx(intercept - coef @ (mean / scale), rel=1e-4, abs=1e-5)
    assert np.abs(coef).sum() > 0  # a head that reads the features, not a constant
    # a study over it by name: its scorecard has wilds' two columns, the stored numbers, and no `clean`
    study = tmp_path / "study.toml"
    model, report = out / "model.pt", tmp_path / "report"
    study.write_text(f'models = [{{model = "file:{model}", label = "dfr"}}]\n'
                     f'datasets = [{{path = "{release}", label = "waterbirds"}}]\n'
                     f'[measures.eval]\n[measures.groups]\n[measures.challenge]\n[report]\nout = "{report}"\n')
    proc = run_cli("study", study, "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    steps = {s["measure"]: s for s in doc["steps"]}
    assert steps["eval"]["skip"] is None and "foreground masks" in steps["challenge"]["skip"]
    cells = {c["title"]: c for c in doc["scorecard"] if c["dataset"] == "waterbirds"}
    assert {"average acc.", "worst-group acc."} <= set(cells) and "clean" not in cells
    with Store(db) as store:
        stored = {m["name"]: m for m in store.metrics(cells["average acc."]["run"])}
    for title, metric in (("average acc.", "adj_acc_avg"), ("worst-group acc.", "acc_wg")):
        assert (cells[title]["value"], cells[title]["lo"], cells[title]["hi"]) == tuple(
            stored[metric][k] for k in ("value", "lo", "hi"))
        assert cells[title]["higher_is_better"]


def save_bird_model(path: Path) -> Path:
    """A random-init timm:test_resnet with Waterbirds' two classes, saved as a bgbench checkpoint."""
    import timm
    from bgbench.models.checkpoint import save_checkpoint
    spec = ModelSpec(name="timm:test_resnet", arch="test_resnet", num_classes=2, class_names=("landbird", "waterbird"))
    save_checkpoint(BgModel(timm.create_model("test_resnet", num_classes=2), spec), path)
    return path


def test_a_study_naming_the_release_folder_itself_keeps_the_datasets_label(release, tmp_path):
    """A study's dataset named by `waterbirds_v1.0/` (the release's folder, not WILDS' root_dir above
    it, which its runs record as their data's root): the scorecard and the report still call it by
    the study's label, and a step skipped there keeps its reason."""
    save_bird_model(tmp_path / "birds.pt")
    study, report = tmp_path / "study.toml", tmp_path / "report"
    study.write_text(f'models = [{{model = "file:{tmp_path / "birds.pt"}", label = "toy"}}]\n'
                     f'datasets = [{{path = "{release / RELEASE_FOLDER}", label = "birds"}}]\n'
                     f'[measures.eval]\n[measures.challenge]\n[report]\nout = "{report}"\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["scorecard"] and {c["dataset"] for c in doc["scorecard"]} == {"birds"}
    page = (report / "index.html").read_text()
    assert "birds" in page and release.name not in page.replace(str(release), "")
    assert "no foreground masks" in page  # the challenge's n/a cell, with why


def test_a_model_the_study_could_not_run_on_it_has_na_with_why_in_its_columns(release, synth_root, model_ckpt,
                                                                              tmp_path):
    """Waterbirds' columns are eval's headlines there (wilds' average and worst-group accuracy), not
    eval's own: a model of another dataset's classes, which the study skipped on Waterbirds, gets
    n/a with the reason in them, as in every other column, never a blank."""
    birds = save_bird_model(tmp_path / "birds.pt")
    study = tmp_path / "study.toml"
    study.write_text(f'models = [{{model = "file:{birds}", label = "birds"}}, {{model = "file:{model_ckpt}", '
                     f'label = "shapes"}}]\n'
                     f'datasets = [{{path = "{release}", label = "wb"}}, {{path = "{synth_root}", label = "s9"}}]\n'
                     f'[measures.eval]\n[report]\nout = "{tmp_path / "report"}"\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    cells = {(c["model"], c["title"]): c for c in json.loads(proc.stdout)["scorecard"] if c["dataset"] == "wb"}
    for title in ("average acc.", "worst-group acc."):
        assert cells[("birds", title)]["value"] is not None
        why = cells[("shapes", title)]["not_available"]
        assert why and "cannot read wb" in why and "2 classes" in why, why


def test_a_validation_split_too_small_for_the_scripts_half_is_one_line():
    """One waterbird on land in val: for a seed whose first shuffle (the script's cut of val in two)
    puts it in the half scored, the half fitted on has none of that group, which the script would
    balance to zero images."""
    from bgbench.errors import BgbenchError
    from bgbench.training.dfr import fit_head_as_repo
    groups = ["landbird on land"] * 4 + ["landbird on water"] * 4 + ["waterbird on land"] + ["waterbird on water"] * 4
    y = np.array([0] * 8 + [1] * 5)
    x = np.random.default_rng(0).normal(size=(len(y), 3))

    def fitted_half(seed):
        order = np.arange(len(y))
        np.random.RandomState(seed).shuffle(order)
        return order[len(y) // 2:]
    seed = next(s for s in range(50) if 8 not in fitted_half(s))
    with pytest.raises(BgbenchError, match="too few for DFR's script.*'waterbird on land'"):
        fit_head_as_repo(x, y, groups, 2, x, seed=seed)
    lucky = next(s for s in range(50) if 8 in fitted_half(s))  # in the fitted half, it is fitted on
    assert fit_head_as_repo(x, y, groups, 2, x, seed=lucky, retrains=2).fitted_on == 4
