"""Spurious ImageNet read as released and scored as its own code scores it.

The test writes a release tree (`images/timestamp.txt` and feature folders of four real classes,
named as the loader parses them) and a torchvision-layout ImageNet val of the same classes, runs a
tiny 1000-class model through bgbench, and compares with an oracle written here from the
repository's definitions (YanNeu/spurious_imagenet), independently of bgbench:

- `dataset/spurious_dataset.py`: `SpuriousDataset` (every folder of `images/`, the class index from
  the third `_` field of its name, every file in it; `no_crop` = Resize(224)) and
  `get_imagenet_matching_subset` (every ImageNet val image of those classes; `test` = Resize(256),
  CenterCrop(224)): `oracle_sets`;
- `dataset/spurious_score.py`: `get_probabilities_targets` (softmax over the outputs),
  `calculate_score_frac_classified_as` (the class's probability; argmax == class) and
  `calculate_spurious_score` (per class `average_precision_score`, val images 1 and spurious 0;
  the mean over classes and the pooled score): `oracle_score`.

Images are written at the sizes those transforms keep (224 x 224 spurious, 256 x 256 val), so the
bicubic resize the repository uses and bgbench's bilinear one give the same pixels.
"""
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from sklearn.metrics import average_precision_score, roc_auc_score
from torch import nn
from torchvision import transforms

import bgbench
from bgbench.errors import BgbenchError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from helpers.spurious_imagenet_tree import TIMESTAMP, write_release as write_spurious

#: ImageNet index -> wnid, the paper's Figure 1 classes (hummingbird, koala, freight car, hard disc).
CLASSES = {94: "n01833805", 105: "n01882714", 565: "n03393912", 592: "n03492542"}
#: The feature folders written: (class index, neural PCA component, images); koala has two features.
FEATURES = ((94, 3, 6), (105, 1, 5), (105, 7, 4), (565, 0, 6), (592, 2, 5))
VAL_PER_CLASS = 5


def write_release(base: Path):
    """(the release root, the ImageNet root) of a freshly written pair of trees."""
    root, imagenet = write_spurious(base / "spurious_imagenet", FEATURES), base / "imagenet"
    rng = np.random.default_rng(5)
    for j, (index, wnid) in enumerate(CLASSES.items()):
        folder = imagenet / "val" / wnid
        folder.mkdir(parents=True)
        for k in range(VAL_PER_CLASS):
            img = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
            img[16:240, 16:240, (j + k) % 3] = rng.integers(0, 256)
            Image.fromarray(img).save(folder / f"ILSVRC2012_val_{1000 * j + k + 1:08d}.JPEG", format="PNG")
    return root, imagenet


class ChannelLinear(nn.Module):
    """Logits from the image's channel means: a decision that varies with the pixels."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.lin = nn.Linear(3, 1000)
        live = list(CLASSES) + [0, 1, 2]
        with torch.no_grad():
            self.lin.weight.zero_()
            self.lin.bias.fill_(-30.0)
            self.lin.weight[live] = 8 * torch.randn(len(live), 3, generator=g)
            self.lin.bias[live] = torch.randn(len(live), generator=g)

    def forward(self, x):
        return self.lin(x.mean(dim=(2, 3)))


def toy_model() -> BgModel:
    spec = ModelSpec(name="toy:imagenet", arch="toy", num_classes=1000, label_space="imagenet1k",
                     mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    return BgModel(ChannelLinear(), spec).eval()


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return write_release(tmp_path_factory.mktemp("spurious"))


def oracle_sets(root: Path, imagenet: Path):
    """([(path, class index)] of the spurious images, [(path, class index)] of the matching val
    images), as `SpuriousDataset` and `get_imagenet_matching_subset` list them."""
    images = root / "images"
    spurious = []
    for subdir in next(os.walk(images))[1]:
        subdir_class = int(subdir.split("_")[2])
        spurious += [(images / subdir / f, subdir_class) for f in os.listdir(images / subdir)]
    included = set(c for _, c in spurious)
    wnid_of = {k: w for k, w in CLASSES.items()}  # the tree's val holds only these classes' folders
    val = [(imagenet / "val" / wnid_of[c] / f, c) for c in sorted(included)
           for f in sorted(os.listdir(imagenet / "val" / wnid_of[c]))]
    return spurious, val


def oracle_probabilities(net: nn.Module, pairs, transform):
    """`get_probabilities_targets`: softmax over the outputs of each image."""
    x = torch.stack([transform(Image.open(p).convert("RGB")) for p, _ in pairs])
    with torch.no_grad():
        return torch.softmax(net(x), dim=1), torch.tensor([c for _, c in pairs])


def oracle_score(net: nn.Module, root: Path, imagenet: Path) -> dict:
    """`calculate_spurious_score`: per class the AP of its probability, val (1) against spurious (0)."""
    bicubic = transforms.InterpolationMode.BICUBIC
    no_crop = transforms.Compose([transforms.Resize(224, interpolation=bicubic), transforms.ToTensor()])
    test = transforms.Compose([transforms.Resize(int(256 / 224 * 224), interpolation=bicubic),
                               transforms.CenterCrop(224), transforms.ToTensor()])
    spurious, val = oracle_sets(root, imagenet)
    out_probs, out_targets = oracle_probabilities(net, spurious, no_crop)
    in_probs, in_targets = oracle_probabilities(net, val, test)
    per_class, roc, merged_in, merged_out, frac_out = {}, {}, [], [], {}
    for class_idx in set(out_targets.tolist()):
        in_scores = in_probs[in_targets == class_idx, class_idx].numpy()
        out_scores = out_probs[out_targets == class_idx, class_idx].numpy()
        frac_out[class_idx] = torch.mean((out_probs[out_targets == class_idx].argmax(1) == class_idx).float()).item()
        y_true = len(in_scores) * [1] + len(out_scores) * [0]
        y_score = np.concatenate([in_scores, out_scores])
        per_class[class_idx] = average_precision_score(y_true, y_score)
        roc[class_idx] = roc_auc_score(y_true, y_score)
        merged_in.append(in_scores)
        merged_out.append(out_scores)
    y_true = sum(map(len, merged_in)) * [1] + sum(map(len, merged_out)) * [0]
    joint = average_precision_score(y_true, np.concatenate(merged_in + merged_out))
    return {"mean": float(np.mean(list(per_class.values()))), "joint": joint, "per_class": per_class, "roc": roc,
            "frac_out": frac_out, "spurious": len(spurious), "val": len(val)}


def test_the_release_is_read_as_its_loader_reads_it(release, monkeypatch):
    from bgbench.data.resolve import resolve_layout
    root, imagenet = release
    layout = resolve_layout(root)
    assert layout.kind == "spurious_imagenet" and layout.variants == ("original",)
    spurious, _ = oracle_sets(root, imagenet)
    index_of = {w: k for k, w in CLASSES.items()}
    ours = sorted((it.path.resolve(), index_of[layout.classes[it.label]]) for it in layout.items("original"))
    assert ours == sorted((p.resolve(), c) for p, c in spurious) and len(ours) == sum(n for *_, n in FEATURES)
    assert layout.classes == tuple(CLASSES[k] for k in sorted(CLASSES))  # ImageNet's index order
    assert resolve_layout(root / "images").items("original") == layout.items("original")  # images/ itself


def test_the_spurious_score_is_spurious_score_pys(release, tmp_path, monkeypatch, one_thread):
    root, imagenet = release
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    model = toy_model()
    result = bgbench.probe("spurious_imagenet", model, root, progress=False)
    want = oracle_score(model.net, root, imagenet)
    doc = result.summary().to_dict()
    assert doc["images"] == {"imagenet_val": want["val"], "spurious": want["spurious"]}
    got = {c["index"]: c for c in doc["classes"]}
    assert set(got) == set(want["per_class"])
    for index, ap in want["per_class"].items():
        assert got[index]["ap"] == pytest.approx(ap, abs=1e-9), index
        assert got[index]["auroc"] == pytest.approx(want["roc"][index], abs=1e-9), index
        assert got[index]["spurious_classified_as"] == pytest.approx(want["frac_out"][index], abs=1e-9)
    assert doc["spurious_score"]["value"] == pytest.approx(want["mean"], abs=1e-9)
    assert doc["spurious_score_joint"] == pytest.approx(want["joint"], abs=1e-9)
    assert 0.2 < want["mean"] < 0.99  # the spurious images outrank some val images: the score can move
    assert doc["spurious_score"]["lo"] <= doc["spurious_score"]["value"] <= doc["spurious_score"]["hi"]
    db = tmp_path / "r.db"
    run_id = bgbench.record(result, db)
    with Store(db) as store:  # the stored run summarises as the fresh result did
        stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
    assert stored[("spurious_score", "")] == pytest.approx(want["mean"], abs=1e-9)
    assert stored[("spurious_class_ap", CLASSES[105])] == pytest.approx(want["per_class"][105], abs=1e-9)


def one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message
    return message


def copy_release(release, tmp_path):
    import shutil
    root, imagenet = release
    shutil.copytree(root, tmp_path / "copy")
    return tmp_path / "copy", imagenet


def test_bad_releases_are_one_line_errors_and_nothing_outside_is_read(release, tmp_path, monkeypatch):
    from bgbench.data.resolve import resolve_layout
    root, imagenet = copy_release(release, tmp_path)
    images = root / "images"
    folder = images / "spurious_class_94_comp_3"
    folder.rename(images / "spurious_class_hummingbird")
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "spurious_class_hummingbird" in one_line(e) and "third '_' field" in one_line(e)
    (images / "spurious_class_hummingbird").rename(images / "spurious_class_1000_comp_3")
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "class index 1000" in one_line(e)
    (images / "spurious_class_1000_comp_3").rename(folder)
    (folder / "notes.txt").write_text("x")
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "notes.txt" in one_line(e) and "not one" in one_line(e)
    (folder / "notes.txt").unlink()
    (images / "spurious_class_592_comp_9").mkdir()
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "spurious_class_592_comp_9" in one_line(e) and "empty" in one_line(e)
    (images / "spurious_class_592_comp_9").rmdir()
    outside = tmp_path / "outside.png"
    Image.fromarray(np.zeros((224, 224, 3), np.uint8)).save(outside)
    (folder / "linked.png").symlink_to(outside)
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "leads outside the dataset root" in one_line(e) and "linked.png" in one_line(e)
    (folder / "linked.png").unlink()
    (images / "timestamp.txt").write_text("March 2023\n")
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "timestamp.txt" in one_line(e)
    (images / "timestamp.txt").write_text(TIMESTAMP + "\n")
    assert len(resolve_layout(root).items("original")) == sum(n for *_, n in FEATURES)  # repaired: reads again


def test_the_imagenet_it_is_scored_against_must_be_there(release, tmp_path, monkeypatch):
    import shutil
    root, imagenet = release
    monkeypatch.delenv("BGBENCH_IMAGENET", raising=False)
    with pytest.raises(BgbenchError) as e:
        bgbench.probe("spurious_imagenet", toy_model(), root, progress=False)
    assert "BGBENCH_IMAGENET" in one_line(e)
    partial = tmp_path / "imagenet"
    shutil.copytree(imagenet, partial)
    shutil.rmtree(partial / "val" / CLASSES[565])
    with pytest.raises(BgbenchError) as e:
        bgbench.probe("spurious_imagenet", toy_model(), root, imagenet=str(partial), progress=False)
    assert CLASSES[565] in one_line(e) and "no val images" in one_line(e)
    spec = ModelSpec(name="toy:four", arch="toy", num_classes=4, label_space="dataset")
    with pytest.raises(BgbenchError) as e:
        bgbench.probe("spurious_imagenet", BgModel(nn.Sequential(nn.Flatten(), nn.LazyLinear(4)), spec), root,
                      imagenet=str(imagenet), progress=False)
    assert "1000-class" in one_line(e)


def test_it_keeps_the_contract_of_every_measure_and_heads_its_benchmarks_scorecard(release, synth_root, tmp_path,
                                                                                   monkeypatch):
    """What test_contract.py checks of every measure (recorded once, read back as printed, its
    headline in `bgbench runs`, its section in the report), through its command with a published
    timm model from a hand-written hub cache; its scorecard columns on its data; and a study that
    lists it beside another dataset runs it where it reads the data and says why not elsewhere."""
    import json

    from bgbench.measures.registry import get_measure
    from conftest import assert_one_line_error, run_cli
    from helpers import contract
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    root, imagenet = release
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    monkeypatch.delenv("BGBENCH_IMAGENET", raising=False)
    measure, db = get_measure("spurious_imagenet"), tmp_path / "r.db"
    base = ("probe", "spurious_imagenet", "--model", f"timm:{TAG}", "--resize", "none", "--data", root, "--db", db)
    assert_one_line_error(run_cli(*base, "--quiet"), "BGBENCH_IMAGENET")
    proc = run_cli(*base, "--imagenet", imagenet, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)
    with Store(db) as store:
        run_id = contract.check_recorded(store, measure, printed)
    contract.check_headline(run_cli, measure, db, run_id)
    report = bgbench.report(db, tmp_path / "site", progress=False)
    with Store(db) as store:
        contract.check_report(report, measure, store, run_id)
    html = report.index.read_text(encoding="utf-8")
    assert ">spurious score &uarr;</th>" in html and ">spurious ROC AUC &uarr;</th>" in html
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    proc = run_cli("profile", "--model", f"timm:{TAG}", "--resize", "none", "--data", root, "--data", synth_root,
                   "--measures", "eval", "spurious_imagenet", "--out", tmp_path / "p", "--db", tmp_path / "s.db",
                   "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    steps = {(s["dataset"], s["measure"]): s for s in doc["steps"]}
    assert steps[(root.name, "spurious_imagenet")]["skip"] is None and steps[(root.name, "eval")]["skip"] is None
    assert "not the Spurious ImageNet release" in steps[(synth_root.name, "spurious_imagenet")]["skip"]
    cells = {(c["dataset"], c["title"]): c for c in doc["scorecard"] if c["value"] is not None}
    assert cells[(root.name, "spurious score")]["value"] == pytest.approx(printed["spurious_score"]["value"])
    assert cells[(root.name, "spurious ROC AUC")]["value"] == pytest.approx(printed["spurious_auroc"]["value"])
    assert cells[(root.name, "spurious score")]["higher_is_better"]


def _plan_lines(study: Path, db: Path) -> list:
    from conftest import run_cli
    proc = run_cli("study", study, "--db", db, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    return [ln for ln in proc.stdout.splitlines() if ln.lstrip().startswith("[")]


def test_a_studys_plan_counts_both_arms_forwards(release, tmp_path, monkeypatch):
    """`study --dry-run` counts a forward per release image and per ImageNet val image of its
    classes (counted here on disk), from the study's `imagenet` (relative to the study file) or
    $BGBENCH_IMAGENET; and a run makes one row, one forward, per image of each arm."""
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    root, imagenet = release
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    monkeypatch.delenv("BGBENCH_IMAGENET", raising=False)
    spurious = sum(1 for p in (root / "images").rglob("*.png"))
    val = sum(1 for p in (imagenet / "val").rglob("*.JPEG"))
    assert (spurious, val) == (sum(n for _, _, n in FEATURES), len(CLASSES) * VAL_PER_CLASS)
    study = tmp_path / "study.toml"
    study.write_text(f'models = ["timm:{TAG}"]\ndatasets = ["{root}"]\n[measures.spurious_imagenet]\n'
                     f'imagenet = "{os.path.relpath(imagenet, tmp_path)}"\n[report]\nout = "{tmp_path / "out"}"\n')
    (line,) = _plan_lines(study, tmp_path / "r.db")
    assert "to run" in line and f"{spurious + val:,} forwards" in line, line
    study.write_text(f'models = ["timm:{TAG}"]\ndatasets = ["{root}"]\n[measures.spurious_imagenet]\n'
                     f'[report]\nout = "{tmp_path / "out"}"\n')
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    (line,) = _plan_lines(study, tmp_path / "r.db")
    assert f"{spurious + val:,} forwards" in line, line
    result = bgbench.probe("spurious_imagenet", toy_model(), root, progress=False)
    assert len(result.rows) == spurious + val


def test_a_studys_plan_skips_it_for_a_model_that_is_not_an_imagenet_model(release, tmp_path, monkeypatch):
    """A model with as many outputs as the release has classes, but its own classes (not ImageNet's
    1000), is skipped with the reason in the plan, not started and refused mid-study."""
    from bgbench.models.checkpoint import save_checkpoint
    import timm
    root, imagenet = release
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    names = tuple(f"c{k}" for k in range(len(CLASSES)))
    spec = ModelSpec(name="timm:test_resnet", arch="test_resnet", num_classes=len(names), class_names=names)
    save_checkpoint(BgModel(timm.create_model("test_resnet", num_classes=len(names)), spec), tmp_path / "m.pt")
    study = tmp_path / "study.toml"
    study.write_text(f'models = [{{model = "file:{tmp_path / "m.pt"}", label = "mine"}}]\ndatasets = ["{root}"]\n'
                     f'[measures.spurious_imagenet]\n[report]\nout = "{tmp_path / "out"}"\n')
    (line,) = _plan_lines(study, tmp_path / "r.db")
    assert "skipped" in line and "to run" not in line, line
