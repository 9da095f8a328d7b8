"""ImageNet-D and Spawrious read as released and scored as their own code scores them.

Each test builds a tree in the release's layout (real class names, generated pixels), reads it with
bgbench and with an oracle written here from the benchmark's own definitions (which folders and
files its loader reads, how it labels them, how its script counts), independently of bgbench, and
finds the same images, labels and groups; the headline bgbench stores equals what the benchmark's
definition computes from the same stored predictions.

- ImageNet-D (chenshuang-zhang/imagenet_d): `utils/data_loaders_imgnet_id.py` (`ImageNetDLoader`)
  and the counting of `evaluate_imagenet_models.py` (`test_model`, lines 34-45): `imagenet_d_oracle`,
  `imagenet_d_top1`;
- Spawrious (aengusl/spawrious): `spawrious/torch.py` (`_get_combinations`, `build_combination`,
  `SpawriousBenchmark._create_data_list` and its `CustomImageFolder`) and `example.py`
  (`evaluate`): `spawrious_oracle`, `spawrious_accuracy`.
"""
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from torch import nn

import bgbench
from bgbench.class_maps import IMAGENET1K, imagenet_d_class_map
from bgbench.data.resolve import resolve_layout
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli
from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
from helpers.benchmark_trees import BREEDS, IMAGENET_D_CLASSES, LOCATIONS, imagenet_d_tree, spawrious_tree

LABEL = f"timm:{TAG}"  # a study labels a hub model with its scheme
RESOURCES = Path(bgbench.__file__).parent / "resources" / "imagenet_d"
CHALLENGES = ("o2o_easy", "o2o_medium", "o2o_hard", "m2m_easy", "m2m_medium", "m2m_hard")


@pytest.fixture(scope="module")
def imagenet_d(tmp_path_factory) -> Path:
    return imagenet_d_tree(tmp_path_factory.mktemp("imagenet-d"), {"background": 3, "texture": 2, "material": 1})


@pytest.fixture(scope="module")
def spawrious(tmp_path_factory) -> Path:
    return spawrious_tree(tmp_path_factory.mktemp("spawrious"), per_folder=5)


def imagenet_d_oracle(root: Path, nuisance: str) -> list:
    """(path, ImageNet indices) of every image `ImageNetDLoader` reads from `root/nuisance`: its class
    folders sorted by name, every file of each in directory order, labelled with the folder's entry
    in the repository's `preprocessing/imgnet_d2imgnet_id.txt` (JSON: folder -> ImageNet indices),
    padded with -1 to 10 entries (what its collate needs: no entry may list more)."""
    table = json.loads((RESOURCES / "imgnet_d2imgnet_id.txt").read_text())
    assert max(len(v) for v in table.values()) <= 10
    return [(root / nuisance / folder / name, table[folder] + [-1] * (10 - len(table[folder])))
            for folder in sorted(os.listdir(root / nuisance)) for name in os.listdir(root / nuisance / folder)]


def imagenet_d_top1(top5: list, labels: list) -> int:
    """`test_model`'s top-1 count of one image: one for each of its (padded) label entries equal to
    the model's first class (`pred.eq(target[k])[:1]` summed over k); the entries are distinct
    ImageNet indices or -1, so an image counts once when its top-1 is one of its indices."""
    return sum(int(top5[0] == label) for label in labels)


def test_imagenet_d_is_read_as_its_loader_reads_it(imagenet_d):
    layout = resolve_layout(imagenet_d)
    assert layout.kind == "imagenet_d" and layout.variants == ("background", "texture", "material")
    members = imagenet_d_class_map().members()  # ImageNet-D label -> the ImageNet indices that count as it
    for nuisance in layout.variants:
        source = imagenet_d_oracle(imagenet_d, nuisance)
        theirs = sorted((p.resolve(), tuple(sorted(i for i in labels if i >= 0))) for p, labels in source)
        ours = sorted((it.path.resolve(), tuple(sorted(members[it.label]))) for it in layout.items(nuisance))
        assert ours == theirs and len(ours) == len(IMAGENET_D_CLASSES) * {"background": 3, "texture": 2,
                                                                          "material": 1}[nuisance]
        assert all(len(labels) == 10 for _, labels in source)  # padded with -1, as its collate needs
    assert {c: sorted(members[layout.classes.index(c)]) for c in ("banana", "bicycle", "chair")} == \
        {"banana": [954], "bicycle": [444, 671], "chair": [423, 559, 765]}


class ChannelLinear(nn.Module):
    """Logits from the image's channel means: a decision that varies with the pixels."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.lin = nn.Linear(3, weight.shape[0])
        with torch.no_grad():
            self.lin.weight.copy_(weight)
            self.lin.bias.copy_(bias)

    def forward(self, x):
        return self.lin(x.mean(dim=(2, 3)))


def imagenet_model() -> BgModel:
    """A 1000-class ImageNet model whose top classes are the test classes' ImageNet indices and a
    few others (so it is right on some images and wrong on others, and a top-5 holds several of a
    class's indices)."""
    g = torch.Generator().manual_seed(0)
    live = [954, 671, 444, 423, 559, 765, 560, 518, 504, 0, 1, 2, 3]
    weight = torch.zeros(1000, 3)
    bias = torch.full((1000,), -50.0)
    weight[live] = 40 * torch.randn(len(live), 3, generator=g)
    bias[live] = torch.randn(len(live), generator=g)
    spec = ModelSpec(name="toy:imagenet", arch="toy", num_classes=1000, label_space=IMAGENET1K,
                     mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    return BgModel(ChannelLinear(weight, bias), spec).eval()


def test_imagenet_d_accuracy_per_nuisance_is_its_evaluate_scripts(imagenet_d, tmp_path, one_thread):
    db = tmp_path / "r.db"
    report = bgbench.evaluate(imagenet_model(), imagenet_d, progress=False)
    run_id = bgbench.record(report, db)
    with Store(db) as store:
        stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
        rows = {v: {r["image_id"]: json.loads(r["top5_classes"]) for r in store.predictions(run_id, v)}
                for v in ("background", "texture", "material")}
    accuracies = []
    for nuisance, top5_of in rows.items():
        source = imagenet_d_oracle(imagenet_d, nuisance)
        # the stored top-5 ImageNet classes, best first, of each image the loader reads
        top1_cnt = sum(imagenet_d_top1(top5_of["/".join(p.parts[-2:])], labels) for p, labels in source)
        cnt = len(source)
        accuracies.append(top1_cnt / cnt)
        assert stored[("accuracy", nuisance)] == pytest.approx(top1_cnt / cnt, abs=1e-12)
        assert cnt == len(top5_of)
    assert 0 < accuracies[0] < 1  # the model is right on some background images and wrong on others
    runs = run_cli("runs", "--db", db)
    assert f"accuracy[background]={100 * accuracies[0]:.1f}%" in runs.stdout  # background first


#: `_get_combinations`: challenge -> (the breeds' training locations, their test locations, the
#: o2o filler location), the breeds in the order bulldog, dachshund, labrador, corgi.
SPAWRIOUS_CHALLENGES = {
    "o2o_easy": (("desert", "jungle", "dirt", "snow"), ("dirt", "snow", "desert", "jungle"), "beach"),
    "o2o_medium": (("mountain", "beach", "dirt", "jungle"), ("jungle", "dirt", "beach", "snow"), "desert"),
    "o2o_hard": (("jungle", "mountain", "snow", "desert"), ("mountain", "snow", "desert", "jungle"), "beach"),
    "m2m_hard": (("dirt", "jungle", "snow", "beach"), ("snow", "beach", "dirt", "jungle"), None),
    "m2m_easy": (("desert", "mountain", "dirt", "jungle"), ("dirt", "jungle", "mountain", "desert"), None),
    "m2m_medium": (("beach", "snow", "mountain", "desert"), ("desert", "mountain", "beach", "snow"), None),
}
#: `SpawriousBenchmark.class_list` and `locations_list`: the labels and location labels
SPAWRIOUS_CLASSES = ("bulldog", "corgi", "dachshund", "labrador")
SPAWRIOUS_LOCATIONS = ("desert", "jungle", "dirt", "mountain", "snow", "beach")
SPAWRIOUS_TOTAL = 3168  # `build_combination`'s images per (breed, entry)


def spawrious_oracle(root: Path, challenge: str) -> dict:
    """part -> [(path, class label, location label)] of every image of a challenge's training and
    test sets, as `build_combination` lays them out and `_create_data_list` reads them.

    Each breed has two entries (entry 0 and entry 1) per part. m2m: bulldog and dachshund train on
    the first two locations crossed (bulldog on 1st then 2nd, dachshund on 2nd then 1st), labrador
    and corgi on the last two alike, 3168 images each; they test on their test locations crossed the
    same way, with no limit. o2o: each breed trains on its own location, 97% and 87% of 3168
    (int()), and all four breeds on the filler for the rest (96 and 412); it tests on its test
    location twice. Entry i of an o2o challenge reads folder spawrious224/i/, every m2m entry
    spawrious224/0/; a (location, breed) folder gives its files ending .png, .jpg or .jpeg in
    `os.listdir`'s order, cut to the first *limit* where there is one."""
    train, test, filler = SPAWRIOUS_CHALLENGES[challenge]
    o2o = challenge.startswith("o2o")
    order = ("bulldog", "dachshund", "labrador", "corgi")
    if o2o:
        counts = (int(0.97 * SPAWRIOUS_TOTAL), int(0.87 * SPAWRIOUS_TOTAL))
        parts = {"train": [((b,), [(train[i], counts[0]), (train[i], counts[1])]) for i, b in enumerate(order)]
                 + [(order, [(filler, SPAWRIOUS_TOTAL - counts[0]), (filler, SPAWRIOUS_TOTAL - counts[1])])],
                 "test": [((b,), [(test[i], None), (test[i], None)]) for i, b in enumerate(order)]}
    else:
        cross = {"bulldog": (0, 1), "dachshund": (1, 0), "labrador": (2, 3), "corgi": (3, 2)}
        parts = {"train": [((b,), [(train[j], SPAWRIOUS_TOTAL) for j in cross[b]]) for b in order],
                 "test": [((b,), [(test[j], None) for j in cross[b]]) for b in order]}
    out = {}
    for part, groups in parts.items():
        out[part] = []
        for entry in (0, 1):  # the data lists: entry 0 of every breed group, then entry 1
            for breeds, entries in groups:
                location, limit = entries[entry]
                for breed in breeds:
                    folder = root / "spawrious224" / str(entry if o2o else 0) / location / breed
                    files = [f for f in os.listdir(folder) if f.endswith((".png", ".jpg", ".jpeg"))]
                    out[part] += [((folder / f).resolve(), SPAWRIOUS_CLASSES.index(breed),
                                   SPAWRIOUS_LOCATIONS.index(location)) for f in (files[:limit] if limit else files)]
    return out


def spawrious_accuracy(predictions: list, labels: list) -> float:
    """`example.py`'s `evaluate`: 100 × the share of images whose argmax is their class label."""
    return 100 * sum(int(p == y) for p, y in zip(predictions, labels)) / len(labels)


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_spawrious_sets_are_its_data_lists(challenge, spawrious):
    assert (SPAWRIOUS_CLASSES, SPAWRIOUS_LOCATIONS) == (BREEDS, LOCATIONS)  # the tree's labels are the source's
    sets = spawrious_oracle(spawrious, challenge)
    for part in ("train", "test"):
        layout = resolve_layout(spawrious, split=f"{challenge}-{part}")
        theirs = sorted(sets[part])
        ours = sorted((it.path.resolve(), it.label, LOCATIONS.index(layout.groups[it.image_id].split(" on ")[1]))
                      for it in layout.items("original"))
        assert ours == theirs and ours
        assert all(layout.groups[it.image_id] == f"{BREEDS[it.label]} on {layout.groups[it.image_id].split(' on ')[1]}"
                   for it in layout.items("original"))
    assert resolve_layout(spawrious, split=challenge).split == f"{challenge}-test"


def test_a_spawrious_limit_keeps_the_first_images_in_directory_order(spawrious, tmp_path):
    """o2o's filler takes the first 96 images of folder 0 (3168 - int(0.97 * 3168)), in os.listdir's order."""
    root = tmp_path / "limit"
    shutil.copytree(spawrious, root)
    folder = root / "spawrious224" / "0" / "beach" / "corgi"
    one = next(folder.iterdir())
    for n in range(100):
        shutil.copy(one, folder / f"extra_{n:03d}.png")
    theirs = sorted(p for p, _, _ in spawrious_oracle(root, "o2o_easy")["train"])
    ours = sorted(it.path.resolve() for it in resolve_layout(root, split="o2o_easy-train").items("original"))
    assert ours == theirs
    assert sum(p.parent == folder.resolve() for p in ours) == 96


def breed_model(seed: int = 0) -> BgModel:
    g = torch.Generator().manual_seed(seed)
    spec = ModelSpec(name="toy:breeds", arch="toy", num_classes=4, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0),
                     class_names=BREEDS)
    return BgModel(ChannelLinear(20 * torch.randn(4, 3, generator=g), torch.randn(4, generator=g)), spec).eval()


def test_spawrious_accuracy_and_groups_are_its_evaluate(spawrious, tmp_path, one_thread):
    db = tmp_path / "r.db"
    report = bgbench.evaluate(breed_model(), spawrious, split="o2o_easy-test", progress=False)
    run_id = bgbench.record(report, db)
    with Store(db) as store:
        stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
        pred_of = {r["image_id"]: r["pred"] for r in store.predictions(run_id, "original")}
    root = (spawrious / "spawrious224").resolve()
    # example.py's `evaluate` on its own test set (`get_test_dataset`), each image answered with its
    # stored prediction
    test_set = spawrious_oracle(spawrious, "o2o_easy")["test"]
    assert len(test_set) == len(pred_of)
    preds = [pred_of[path.relative_to(root).as_posix()] for path, _, _ in test_set]
    acc = spawrious_accuracy(preds, [cls for _, cls, _ in test_set])
    assert 100 * stored[("accuracy", "original")] == pytest.approx(acc, abs=1e-9)
    # the groups: the source's (class_label, location_label), each group's accuracy from the same predictions
    groups = {}
    for (path, cls, loc), pred in zip(test_set, preds):
        k, n = groups.get((cls, loc), (0, 0))
        groups[(cls, loc)] = (k + int(pred == cls), n + 1)
    ours = {g["group"]: (g["correct"], g["n"]) for g in report.groups["original"].groups}
    assert ours == {f"{BREEDS[c]} on {LOCATIONS[loc]}": v for (c, loc), v in groups.items()}
    assert stored[("worst_group_accuracy", "original")] == min(k / n for k, n in groups.values())
    assert 0 < acc < 100
    again = run_cli("analyze", "groups", run_id, "--db", db, "--json")  # the stored run, regrouped from the tree
    assert again.returncode == 0, again.stderr
    assert {g["group"]: (g["correct"], g["n"]) for g in json.loads(again.stdout)["groups"]} == ours


def test_a_tree_without_the_default_challenge_says_which_it_read(tmp_path, capsys, one_thread):
    """Without 0/snow (m2m_hard's), `test` is the first challenge the tree holds: said on stderr
    and in the JSON; a split that names its challenge, or a tree that holds m2m_hard, says nothing."""
    root = spawrious_tree(tmp_path / "s", per_folder=1, size=16)
    shutil.rmtree(root / "spawrious224" / "0" / "snow")
    report = bgbench.evaluate(breed_model(), root, progress=False)
    err = capsys.readouterr().err
    read = report.to_dict()["split_read"]
    assert read["split"] == "m2m_easy-test" == resolve_layout(root).split
    assert "lacks m2m_hard's folder 0/snow/" in read["why"] and "m2m_easy test set was read" in read["why"]
    assert read["why"] in err and json.loads(json.dumps(report.to_dict()))["split_read"] == read
    for data, split in ((root, "m2m_easy-test"), (spawrious_tree(tmp_path / "whole", per_folder=1, size=16), None)):
        report = bgbench.evaluate(breed_model(), data, split=split, progress=False)
        assert "split_read" not in report.to_dict() and "was read" not in capsys.readouterr().err


def test_dfr_fits_on_spawrious_training_split_by_its_groups(spawrious, tmp_path):
    out, db = tmp_path / "dfr", tmp_path / "r.db"
    proc = run_cli("train", "--recipe", "dfr", "--model", "timm:test_resnet", "--data", spawrious,
                   "--split", "o2o_easy-train", "--out", out, "--retrains", "1", "--c-grid", "1", "--feature-cache", "none",
                   "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    head = json.loads((out / "head.json").read_text())
    train = resolve_layout(spawrious, split="o2o_easy-train")
    assert head["split"] == "o2o_easy-train" and head["images"] == len(train.items("original"))
    assert head["groups"] == len(set(train.groups.values())) == 8  # each breed on its location and on the filler
    assert head["group_balanced"] is True
    ev = run_cli("eval", "--model", f"file:{out / 'model.pt'}", "--data", spawrious, "--split", "o2o_easy-test",
                 "--db", db, "--json", "--quiet")
    assert ev.returncode == 0, ev.stderr
    assert {g["group"] for g in json.loads(ev.stdout)["groups"]["original"]["groups"]} == {
        "bulldog on dirt", "corgi on jungle", "dachshund on snow", "labrador on desert"}


def test_trees_that_are_not_what_they_claim_are_one_line_errors(imagenet_d, spawrious, tmp_path):
    bad = tmp_path / "imagenet-d"
    shutil.copytree(imagenet_d, bad)
    (bad / "background" / "banana").rename(bad / "background" / "bananas")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", bad, "--db", tmp_path / "r.db"),
                          "'bananas' is not an ImageNet-D class")
    (bad / "background" / "bananas").rename(bad / "background" / "banana")
    (bad / "texture" / "mug" / "notes.txt").write_text("x")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", bad, "--db", tmp_path / "r.db"),
                          "notes.txt", "not one")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", imagenet_d, "--split", "val",
                                  "--db", tmp_path / "r.db"), "ImageNet-D, which has no splits")
    missing = tmp_path / "spawrious"
    shutil.copytree(spawrious, missing)
    shutil.rmtree(missing / "spawrious224" / "1" / "snow" / "dachshund")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", missing, "--split", "o2o_easy-test",
                                  "--db", tmp_path / "r.db"), "1/snow/dachshund is missing", "o2o_easy test")
    (missing / "spawrious224" / "0" / "snow" / "poodle").mkdir()
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", missing, "--db", tmp_path / "r.db"),
                          "'poodle' is not a Spawrious breed")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", spawrious, "--split", "o2o_easy-val",
                                  "--db", tmp_path / "r.db"), "its splits are <challenge>-<part>")


#: Hard ImageNet's columns (title -> stored (metric, variant), higher is better): its figures, not RIVAL10's
HARD_IMAGENET_COLUMNS = {"Grad-CAM IoU": (("saliency_iou_image_mean", ""), True),
                         "Δ density": (("saliency_density_diff_image_mean", ""), True),
                         "acc. clean": (("ablation_acc", "none"), True),
                         "acc. object gray": (("ablation_acc", "fg"), False),
                         "acc. box gray": (("ablation_acc", "bbox"), False),
                         "acc. box tiled": (("ablation_acc", "tile"), False),
                         "RFS σ 60/255": (("rfs", "0.235294"), True), "RFS σ 120/255": (("rfs", "0.470588"), True)}


def test_a_study_over_synthetic9_and_the_benchmarks_ends_with_one_scorecard(synth_root, model_ckpt, imagenet_d,
                                                                             tmp_path, monkeypatch):
    """The demo's kind of model (Synthetic-9's classes), a 1000-class timm ImageNet model (published
    weights read from a hand-written hub cache) and a DFR head fitted on Spawrious' training split,
    on Synthetic-9, ImageNet-D, Spawrious and Hard ImageNet (over its generated ImageNet): each model
    runs where it reads the data, the rest is skipped with its reason, and the scorecard has every
    benchmark's columns, Hard ImageNet's figures in place of RIVAL10's headlines on its data."""
    from bgbench.data.hardimagenet import IMAGENET_ENV
    from helpers.hardimagenet_tree import write_tree
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    spawrious = spawrious_tree(tmp_path / "spawrious", per_folder=10, folders=("0",))  # m2m reads folder 0
    hard, imagenet, _ = write_tree(tmp_path / "hin", per_class=1)
    monkeypatch.setenv(IMAGENET_ENV, str(imagenet))
    db = tmp_path / "r.db"
    proc = run_cli("train", "--recipe", "dfr", "--model", "timm:test_resnet", "--data", spawrious, "--out",
                   tmp_path / "dfr", "--retrains", "1", "--c-grid", "1", "--feature-cache", "none", "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    models = [f"file:{model_ckpt}", LABEL, f"file:{tmp_path / 'dfr' / 'model.pt'}"]
    proc = run_cli("profile", *[a for m in models for a in ("--model", m)], "--data", synth_root, "--data", imagenet_d,
                   "--data", spawrious, "--data", hard, "--measures", "eval", "challenge", "noise", "saliency",
                   "ablate", "--out", tmp_path / "p", "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    steps = {(s["model"], s["dataset"], s["measure"]): s for s in doc["steps"]}
    for data in (imagenet_d.name, "spawrious"):  # no masks: the challenge and the probes are skipped, and say why
        assert all(s["skip"] == "the dataset has no foreground masks (fg_mask/)" for (m, d, name), s in steps.items()
                   if d == data and name != "eval" and "cannot read" not in (s["skip"] or ""))
    # masks but no backgrounds to paste its objects on: Hard ImageNet's challenge is skipped, the rest run
    assert steps[(LABEL, hard.name, "challenge")]["skip"] == "the dataset has no only_bg_t backgrounds (only_bg_t/)"
    assert "cannot read" in steps[(LABEL, synth_root.name, "eval")]["skip"]  # no class map for Synthetic-9
    assert "--class-map" in steps[(LABEL, "spawrious", "eval")]["skip"]
    ran = {(s["model"], s["dataset"]) for s in doc["steps"] if s["measure"] == "eval" and s["skip"] is None}
    assert ran == {(Path(model_ckpt).parent.name, synth_root.name), (LABEL, imagenet_d.name), ("dfr", "spawrious"),
                   (LABEL, hard.name)}
    assert all(steps[(LABEL, hard.name, name)]["skip"] is None for name in ("noise", "saliency", "ablate"))
    # a model the study could not run on a dataset: n/a with the reason in that dataset's columns, not blank
    na = {(c["model"], c["dataset"], c["title"]): c["not_available"] for c in doc["scorecard"] if c["value"] is None}
    assert "cannot read" in na[(LABEL, synth_root.name, "BG-Gap")]
    assert "cannot read" in na[(Path(model_ckpt).parent.name, imagenet_d.name, "background")]
    cells = {(c["dataset"], c["title"]): c for c in doc["scorecard"] if c["value"] is not None}
    for title in ("background", "texture", "material"):
        assert (imagenet_d.name, title) in cells and cells[(imagenet_d.name, title)]["higher_is_better"]
        assert cells[(imagenet_d.name, title)]["lo"] <= cells[(imagenet_d.name, title)]["value"]
    assert {("spawrious", "clean"), ("spawrious", "worst group"), (synth_root.name, "BG-Gap")} <= set(cells)
    stored_as = {(imagenet_d.name, t): ("accuracy", t) for t in ("background", "texture", "material")}
    stored_as.update({("spawrious", "clean"): ("accuracy", "original"),
                      ("spawrious", "worst group"): ("worst_group_accuracy", "original")})
    for title, (metric, higher) in HARD_IMAGENET_COLUMNS.items():
        assert cells[(hard.name, title)]["higher_is_better"] is higher, title
        assert cells[(hard.name, title)]["lo"] <= cells[(hard.name, title)]["value"] <= cells[(hard.name, title)]["hi"]
        stored_as[(hard.name, title)] = metric
    # on Hard ImageNet its figures replace RIVAL10's headlines; on Synthetic-9 those stay
    titles = {d: {c["title"] for c in doc["scorecard"] if c["dataset"] == d} for d in (hard.name, synth_root.name)}
    assert not {"saliency precision", "bg gray drop", "object gray drop"} & titles[hard.name]
    assert {"saliency precision", "bg gray drop", "RFS"} <= titles[synth_root.name]
    assert not set(HARD_IMAGENET_COLUMNS) & titles[synth_root.name] and "RFS" in titles[hard.name]
    with Store(db) as store:  # each benchmark's cell is the stored metric of its run
        for column, metric in stored_as.items():
            metrics = {(m["name"], m["variant"]): m for m in store.metrics(cells[column]["run"])}
            assert (cells[column]["value"], cells[column]["lo"], cells[column]["hi"]) == tuple(
                metrics[metric][k] for k in ("value", "lo", "hi")), column
    html = (tmp_path / "p" / "index.html").read_text()
    assert all(t in html for t in (">background<", ">texture<", ">material<", ">worst group<"))
    arrows = {True: "&uarr;", False: "&darr;"}  # the scorecard's column heads, with their direction
    assert all(f">{t} {arrows[higher]}</th>" in html for t, (_, higher) in HARD_IMAGENET_COLUMNS.items())


def test_a_zero_shot_model_reads_the_benchmarks_class_names(tmp_path):
    """A CLIP head over the dataset's own classes takes ImageNet-D's 113 folders and Spawrious' breeds
    from the data, as any dataset's class folders."""
    from helpers.foundation_models import tiny_clip
    clip = f"openclip:{tiny_clip(tmp_path / 'clip')}"
    trees = {imagenet_d_tree(tmp_path / "d", {"texture": 1}): imagenet_d_class_map().num_classes,
             spawrious_tree(tmp_path / "s", per_folder=1, size=16): len(BREEDS)}
    for data, classes in trees.items():
        proc = run_cli("eval", "--model", clip, "--data", data, "--db", tmp_path / "r.db", "--json", "--quiet")
        assert proc.returncode == 0, proc.stderr
        with Store(tmp_path / "r.db") as store:
            spec = json.loads(store.get_run(json.loads(proc.stdout)["run_id"])["spec"])
        assert spec["num_classes"] == classes
