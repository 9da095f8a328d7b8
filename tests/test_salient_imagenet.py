"""Salient ImageNet read as released and scored as its notebooks score it.

The test writes a release tree (tests/helpers/salient_imagenet_tree.py: `wordnet_dict.py`, each
class's `image_names_map.csv` and soft masks, real class and feature indices), the ImageNet training
images it is drawn on and a Mechanical Turk table in the repository's columns, runs a tiny
1000-class model through bgbench, and compares with an oracle written here from the repository's
definitions (singlasahil14/salient_imagenet), independently of bgbench:

- `utils.py`, `MTurk_Results.core_spurious_labels_dict`: a (class, feature) is spurious when at
  least 3 workers answered 'separate_object' or 'background': `oracle_labels`;
- `inspection_utils.py`, `SalientImageNet` (images of the features' columns, `np.unique`;
  Resize(256), CenterCrop(224), ToTensor; the mask the maximum of the features' masks over 255,
  `np.uint8(all_mask * 255)`, the same transform) and `NoiseSensitivityAnalysis`
  (`add_gaussian_noise`: `images + (0 + std * randn) * masks`, clamped; `compute_noisy_acc`: the
  share whose argmax is the class): `oracle_class`;
- `evaluate_sensitivity_core_features.ipynb` / `evaluate_sensitivity_spurious_features.ipynb`: each
  class with core (spurious) features, noise std 0.25: `oracle_accuracies`.

The repository's noise is `torch.randn` unseeded; bgbench's is seeded per image as its measure's
docstring states, and the oracle draws the same by that rule.
"""
import hashlib
import shutil
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from torch import nn
from torchvision import transforms

import bgbench
from bgbench.errors import BgbenchError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from helpers.salient_imagenet_tree import CLASSES, class_colour, write_tree

STD = 0.25


class ColourOrNoise(nn.Module):
    """A 1000-class model that names the class whose colour is nearest the image's mean colour,
    unless the image's pixel-to-pixel differences are large (noise), where it says class 0: noise on
    a large enough region flips its decision, on a small one not."""

    def __init__(self):
        super().__init__()
        self.register_buffer("colours", torch.tensor([class_colour(k) for k in CLASSES], dtype=torch.float32) / 255)
        self.register_buffer("indices", torch.tensor(list(CLASSES)))

    def forward(self, x):
        logits = torch.full((x.shape[0], 1000), -100.0, device=x.device)
        distance = ((x.mean(dim=(2, 3))[:, None, :] - self.colours[None]) ** 2).sum(dim=2)
        logits[:, self.indices] = -50 * distance
        energy = ((x[:, :, 1:, :] - x[:, :, :-1, :]) ** 2).mean(dim=(1, 2, 3))
        logits[:, 0] = 1000 * energy - 20
        return logits


def toy_model() -> BgModel:
    spec = ModelSpec(name="toy:moments", arch="toy", num_classes=1000, label_space="imagenet1k",
                     mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    return BgModel(ColourOrNoise(), spec).eval()


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("salient"))


def oracle_labels(annotations):
    """`core_spurious_labels_dict`: (class -> core features, class -> spurious features)."""
    answers = defaultdict(list)
    for _, row in pd.read_csv(annotations).iterrows():
        answers[f"{int(row['Input.class_index'])}_{int(row['Input.feature_index'])}"].append(row["Answer.main"])
    core, spurious = defaultdict(list), defaultdict(list)
    for key, given in answers.items():
        class_index, feature_index = map(int, key.split("_"))
        num_spurious = sum(a in ["separate_object", "background"] for a in given)
        (spurious if num_spurious >= 3 else core)[class_index].append(feature_index)
    return core, spurious


def oracle_seed(seed: int, image_id: str, target: str) -> int:
    """The measure's stated rule: sha256 of '<seed>\\0<image id>\\0<target>', first 8 bytes little-endian, >> 1."""
    return int.from_bytes(hashlib.sha256(f"{seed}\x00{image_id}\x00{target}".encode()).digest()[:8], "little") >> 1


def oracle_class(net, salient, imagenet, class_index, features, target, seed=0):
    """`compute_noisy_acc` on `SalientImageNet(images_path, masks_path, class_index, features)`."""
    transform = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
    wordnet_dict = eval(open(salient / "wordnet_dict.py").read())  # the test's own file, as the source reads it
    wordnet_id = wordnet_dict[class_index]
    image_names_df = pd.read_csv(salient / wordnet_id / "image_names_map.csv")
    image_names, feature_indices_dict = [], defaultdict(list)
    for feature_index in features:
        for image_name in image_names_df[str(feature_index)].dropna().to_numpy():
            image_names.append(image_name)
            feature_indices_dict[image_name].append(feature_index)
    images, masks, noise = [], [], []
    for image_name in np.unique(np.array(image_names)):
        image = Image.open(imagenet / "train" / wordnet_id / f"{image_name}.JPEG").convert("RGB")
        image_tensor = transform(image)
        all_mask = np.zeros(image_tensor.shape[1:])
        for feature_index in feature_indices_dict[image_name]:
            mask = np.asarray(Image.open(salient / wordnet_id / f"feature_{feature_index}" / f"{image_name}.JPEG"))
            all_mask = np.maximum(all_mask, mask / 255.)
        images.append(image_tensor)
        masks.append(transform(Image.fromarray(np.uint8(all_mask * 255))))
        g = torch.Generator().manual_seed(oracle_seed(seed, f"{wordnet_id}/{image_name}", target))
        noise.append(torch.randn(3, 224, 224, generator=g))
    images_batch, masks_batch = torch.stack(images), torch.stack(masks)
    gaussian_noise = 0.0 + STD * torch.stack(noise)
    images_n = torch.clamp(images_batch + (gaussian_noise * masks_batch), 0.0, 1.0)
    with torch.no_grad():
        preds = net(images_batch).argmax(dim=1).numpy()
        preds_noisy = net(images_n).argmax(dim=1).numpy()
    return np.sum(preds == class_index) / len(preds), np.sum(preds_noisy == class_index) / len(preds)


def oracle_accuracies(net, salient, imagenet, annotations):
    """target -> class index -> (clean accuracy, noisy accuracy), as the two notebooks loop."""
    core, spurious = oracle_labels(annotations)
    out = {}
    for target, features_dict in (("core", core), ("spurious", spurious)):
        out[target] = {c: oracle_class(net, salient, imagenet, c, features_dict[c], target)
                       for c in range(1000) if len(features_dict[c]) > 0}
    return out


def test_the_release_is_read_as_its_loader_reads_it(release, monkeypatch):
    from bgbench.data.resolve import resolve_layout
    salient, imagenet, _ = release
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    layout = resolve_layout(salient)
    assert layout.kind == "salient_imagenet" and layout.classes == tuple(CLASSES[k][0] for k in sorted(CLASSES))
    listed = sorted((imagenet / "train" / w / f"{n}.JPEG").resolve()
                    for w in layout.classes for n in set(pd.read_csv(salient / w / "image_names_map.csv")
                                                         .stack().tolist()))
    assert sorted(it.path.resolve() for it in layout.items("original")) == listed


def test_core_and_spurious_accuracy_are_the_notebooks(release, tmp_path, monkeypatch, one_thread):
    salient, imagenet, annotations = release
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    model = toy_model()
    result = bgbench.probe("salient_imagenet", model, salient, annotations=str(annotations), batch_size=3,
                           progress=False)
    want = oracle_accuracies(model.net, salient, imagenet, annotations)
    doc = result.summary().to_dict()
    assert set(doc["noise_on"]) == {"core", "spurious"}
    for target, left in (("core", "spurious_accuracy"), ("spurious", "core_accuracy")):
        got = {c["index"]: (c["clean_accuracy"], c[left]) for c in doc["noise_on"][target]["per_class"]}
        assert got.keys() == want[target].keys()
        for index, (clean, noisy) in want[target].items():
            assert got[index] == pytest.approx((clean, noisy), abs=1e-12), (target, index)
        mean = np.mean([noisy for _, noisy in want[target].values()])
        assert doc["noise_on"][target]["noisy"]["value"] == pytest.approx(mean, abs=1e-12)
    assert set(want["spurious"]) == {309, 537} and set(want["core"]) == {309, 325, 537, 980}
    drops = [clean - noisy for t in want.values() for clean, noisy in t.values()]
    assert any(d != 0 for d in drops)  # the noise moves some predictions: the numbers can fail
    db = tmp_path / "r.db"
    run_id = bgbench.record(result, db)
    with Store(db) as store:
        stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
    assert stored[("salient_core_accuracy", "")] == pytest.approx(np.mean([n for _, n in want["spurious"].values()]))
    assert stored[("salient_spurious_accuracy", "")] == pytest.approx(np.mean([n for _, n in want["core"].values()]))
    again = bgbench.probe("salient_imagenet", model, salient, annotations=str(annotations), batch_size=7,
                          progress=False)
    assert sorted(again.rows) == sorted(result.rows)  # each image's draw is its own: any batch size


def one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message
    return message


def test_bad_releases_are_one_line_errors_and_nothing_outside_is_read(release, tmp_path, monkeypatch):
    from bgbench.data.resolve import resolve_layout
    salient, imagenet, annotations = release
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    root = tmp_path / "copy"
    shutil.copytree(salient, root)
    bee = root / CLASSES[309][0]

    def probe(**options):
        return bgbench.probe("salient_imagenet", toy_model(), root, progress=False, **options)

    with pytest.raises(BgbenchError) as e:
        probe()
    assert "discover_spurious_features.csv" in one_line(e) and "--annotations" in one_line(e)
    shutil.copy(annotations, root / "discover_spurious_features.csv")  # found in the release's folder
    mask = bee / "feature_1941" / f"{CLASSES[309][0]}_1000.JPEG"
    kept = tmp_path / "kept.JPEG"
    shutil.move(mask, kept)
    with pytest.raises(BgbenchError) as e:
        probe()
    assert str(mask) in one_line(e) and "missing" in one_line(e)
    Image.fromarray(np.zeros((200, 200), np.uint8), mode="L").save(mask, format="JPEG")
    with pytest.raises(BgbenchError) as e:
        probe()
    assert "200x200" in one_line(e) and "224x224" in one_line(e)
    mask.unlink()
    mask.symlink_to(kept)  # a link that leaves the root
    with pytest.raises(BgbenchError) as e:
        probe()
    assert "leads outside the dataset root" in one_line(e)
    mask.unlink()
    shutil.move(kept, mask)
    image = imagenet / "train" / CLASSES[980][0] / f"{CLASSES[980][0]}_1017.JPEG"
    hidden = tmp_path / "hidden.JPEG"
    shutil.move(image, hidden)
    try:
        with pytest.raises(BgbenchError) as e:
            resolve_layout(root)
        assert str(image) in one_line(e) and "missing" in one_line(e)
    finally:
        shutil.move(hidden, image)
    (bee / "image_names_map.csv").rename(bee / "names.csv")
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "image_names_map.csv is missing" in one_line(e)
    (bee / "names.csv").rename(bee / "image_names_map.csv")
    (root / "wordnet_dict.py").write_text("import os\n")
    with pytest.raises(BgbenchError) as e:
        resolve_layout(root)
    assert "wordnet_dict.py" in one_line(e)
    shutil.copy(salient / "wordnet_dict.py", root / "wordnet_dict.py")
    shutil.rmtree(root / CLASSES[980][0])
    with pytest.raises(BgbenchError) as e:
        probe()
    assert "class 980" in one_line(e)
    spec = ModelSpec(name="toy:four", arch="toy", num_classes=4, label_space="dataset")
    shutil.copytree(salient / CLASSES[980][0], root / CLASSES[980][0])
    with pytest.raises(BgbenchError) as e:
        bgbench.probe("salient_imagenet", BgModel(nn.Sequential(nn.Flatten(), nn.LazyLinear(4)), spec), root,
                      progress=False)
    assert "1000-class" in one_line(e)
    monkeypatch.delenv("BGBENCH_IMAGENET")
    with pytest.raises(BgbenchError) as e:
        probe()
    assert "BGBENCH_IMAGENET" in one_line(e)


def test_it_keeps_the_contract_of_every_measure_and_heads_its_benchmarks_scorecard(release, synth_root, tmp_path,
                                                                                   monkeypatch):
    """What test_contract.py checks of every measure, through its command with a published timm
    model from a hand-written hub cache; its scorecard columns on its data in a study beside
    Synthetic-9, where it is skipped with its reason."""
    import json

    from bgbench.measures.registry import get_measure
    from conftest import run_cli
    from helpers import contract
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    salient, imagenet, annotations = release
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    monkeypatch.delenv("BGBENCH_IMAGENET", raising=False)
    measure, db = get_measure("salient_imagenet"), tmp_path / "r.db"
    proc = run_cli("probe", "salient_imagenet", "--model", f"timm:{TAG}", "--resize", "none", "--data", salient,
                   "--imagenet", imagenet, "--annotations", annotations, "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)
    with Store(db) as store:
        run_id = contract.check_recorded(store, measure, printed)
    contract.check_headline(run_cli, measure, db, run_id)
    report = bgbench.report(db, tmp_path / "site", progress=False)
    with Store(db) as store:
        contract.check_report(report, measure, store, run_id)
    small = ["probe", "salient_imagenet", "--model", f"timm:{TAG}", "--resize", "none", "--data", salient, "--imagenet",
             imagenet, "--annotations", annotations, "--batch-size", "4", "--quiet"]
    assert run_cli(*small, "--db", tmp_path / "one.db").returncode == 0
    contract.run_under_torchrun([small], tmp_path / "two.db")  # two ranks share the batches: the same rows
    with Store(tmp_path / "one.db") as one, Store(tmp_path / "two.db") as two:
        (run1,), (run2,) = one.runs(measure.kind), two.runs(measure.kind)
        assert contract.world_size(run2) == 2
        assert contract.table_rows(two, measure, run2["id"]) == contract.table_rows(one, measure, run1["id"])
    html = report.index.read_text(encoding="utf-8")
    assert ">core accuracy &uarr;</th>" in html and ">spurious accuracy &darr;</th>" in html
    monkeypatch.setenv("BGBENCH_IMAGENET", str(imagenet))
    shutil.copy(annotations, salient / "discover_spurious_features.csv")
    try:
        proc = run_cli("profile", "--model", f"timm:{TAG}", "--resize", "none", "--data", salient, "--data",
                       synth_root, "--measures", "eval", "salient_imagenet", "--out", tmp_path / "p", "--db",
                       tmp_path / "s.db", "--json", "--quiet")
    finally:
        (salient / "discover_spurious_features.csv").unlink()
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    steps = {(s["dataset"], s["measure"]): s for s in doc["steps"]}
    assert steps[(salient.name, "salient_imagenet")]["skip"] is None and steps[(salient.name, "eval")]["skip"] is None
    assert "not the Salient ImageNet release" in steps[(synth_root.name, "salient_imagenet")]["skip"]
    cells = {(c["dataset"], c["title"]): c for c in doc["scorecard"] if c["value"] is not None}
    core = printed["noise_on"]["spurious"]["noisy"]["value"]
    assert cells[(salient.name, "core accuracy")]["value"] == pytest.approx(core)
    assert cells[(salient.name, "spurious accuracy")]["higher_is_better"] is False
