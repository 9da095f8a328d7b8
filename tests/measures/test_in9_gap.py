"""Whac-A-Mole's IN-9 gap (the in9_gap measure and the shortcut table's column) against an oracle
written here from Whac-A-Mole's definitions (`imagenet_trainers/base_trainer.py`, `dataset/imagenet9.py`):

- IN-9 laid out as Whac-A-Mole keeps it, only `mixed_same/val/` and `mixed_rand/val/` (ImageFolders:
  labels are the sorted class folders' positions), images of 96 x 128 pixels (not 224 squares);
- each image through torchvision's `Resize(256)`, `CenterCrop(224)`, `ToTensor` and ImageNet's
  `Normalize` (its test transform), a plain forward of the network, the argmax over the 1000
  classes mapped by upstream's `in_to_in9.json` (read here as a file; -1, always wrong, for a class
  with no IN-9 class);
- `in_9_gap = mixed_rand_acc - mixed_same_acc`.

The model is a timm tag with seeded weights in a Hugging Face cache the test writes (offline), its
classes without an IN-9 class pushed down so that every answer is one of IN-9's and varies with the
image, read with ImageNet's mean and std (`--norm imagenet`, Whac-A-Mole's `Normalize`) and fed
the crop at its own size (`--resize none`).
"""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import run_cli
from helpers.hub_cache import TAG, tag_network, use_offline_hub, write_timm_weights

MODEL = f"timm:{TAG}"
#: ImageNet's mean and std (Whac-A-Mole's `Normalize`), and the network fed what it is given (the tag's
#: own 160 px would resize the 224-px crop inside the model, which Whac-A-Mole's transform does not)
OPTIONS = ("--norm", "imagenet", "--resize", "none")
FOLDERS = ("00_dog", "01_bird", "02_wheeled vehicle", "03_reptile", "04_carnivore", "05_insect",
           "06_musical instrument", "07_primate", "08_fish")
ARMS = ("mixed_same", "mixed_rand")
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def in_to_in9() -> torch.Tensor:
    """Upstream's table as Whac-A-Mole's `ImageNet9` builds it: 1000 entries, -1 where none."""
    import bgbench
    raw = json.loads((Path(bgbench.__file__).parent / "resources" / "in_to_in9.json").read_text())
    table = torch.full((1000,), -1, dtype=torch.long)
    for k, v in raw.items():
        table[int(k)] = int(v)
    return table


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Whac-A-Mole's IN-9 (only the two mixed folders), 3 foregrounds a class, and the model's weights."""
    root = tmp_path_factory.mktemp("wam")
    rng = np.random.default_rng(0)
    for arm in ARMS:
        for k, folder in enumerate(FOLDERS):
            (root / "in9" / arm / "val" / folder).mkdir(parents=True)
            for i in range(3):
                tone = k if arm == "mixed_same" else int(rng.integers(9))  # the class's own tone, or another's
                pixels = np.clip(rng.normal(40 + 20 * tone, 60, (96, 128, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(root / "in9" / arm / "val" / folder / f"fg_{k}_{i}.png")
    import safetensors.torch
    import timm
    path, _ = write_timm_weights(root / "hf")  # the cache's layout; the weights are replaced below
    torch.manual_seed(0)
    net = timm.create_model(TAG.split(".")[0], pretrained=False).eval()  # timm's own init
    # the head reads each pooled feature's deviation from its mean over these images (as Whac-A-Mole
    # crops them), in units of its spread: a random head on raw features answers one class for all
    t = transform(crop=True)
    with torch.no_grad():
        feats = torch.cat([net.forward_head(net.forward_features(t(Image.open(p).convert("RGB"))[None]),
                                            pre_logits=True) for p in sorted((root / "in9").rglob("*.png"))])
    mu, sd = feats.mean(0), feats.std(0)
    state = {k: v.contiguous() for k, v in net.state_dict().items()}
    unmapped = (in_to_in9() < 0)[:, None]
    w = torch.where(unmapped | (sd < 1e-3), 0.0, state["fc.weight"] / sd.clamp(min=1e-3))
    state["fc.weight"], state["fc.bias"] = w, torch.where(unmapped[:, 0], -1e4, -(w @ mu))
    safetensors.torch.save_file(state, str(path))
    return {"root": root, "data": root / "in9", "state": state}


@pytest.fixture()
def hub(world, monkeypatch):
    return use_offline_hub(monkeypatch, world["root"] / "hf")


def transform(crop: bool):
    """Whac-A-Mole's test transform (`crop`), or the images as they are (the Backgrounds Challenge's feed)."""
    from torchvision import transforms
    steps = [transforms.Resize(256), transforms.CenterCrop(224)] if crop else []
    return transforms.Compose(steps + [transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def oracle(world, crop: bool = True) -> dict:
    """(arm, image id) -> (label, prediction) as Whac-A-Mole's evaluation makes them (`crop`), or with
    the images fed as they are, for contrast."""
    net, table, t = tag_network(world["state"]), in_to_in9(), transform(crop)
    out = {}
    for arm in ARMS:
        split = world["data"] / arm / "val"
        for label, folder in enumerate(sorted(p.name for p in split.iterdir())):
            for p in sorted((split / folder).iterdir()):
                with torch.no_grad():
                    top = net(t(Image.open(p).convert("RGB")).unsqueeze(0)).argmax(1)
                out[(arm, f"{folder}/{p.stem}")] = (label, int(table[top]))
    return out


def in9_gap(preds: dict) -> float:
    acc = {arm: np.mean([y == p for (a, _), (y, p) in preds.items() if a == arm]) for arm in ARMS}
    return float(acc["mixed_rand"] - acc["mixed_same"])


def test_in9_gap_equals_whac_a_mole_on_its_layout_and_the_table_shows_it(world, hub, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("probe", "in9_gap", "--model", MODEL, *OPTIONS, "--data", world["data"], "--db", db, "--json",
                   "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    from bgbench.store import Store
    with Store(db) as store:
        stored = {(r["arm"], r["image_id"]): (r["label"], r["pred"]) for r in store.probe_rows("probe_in9_gap",
                                                                                          doc["run_id"])}
    expected, as_is = oracle(world), oracle(world, crop=False)
    assert stored == expected
    assert len({p for _, p in expected.values()}) > 3  # the answers vary with the image
    assert stored != as_is and in9_gap(expected) != pytest.approx(in9_gap(as_is))  # and with the crop
    assert doc["gap"]["value"] == pytest.approx(in9_gap(expected)) and doc["gap"]["paired"]

    # the eval of the same folders feeds them as they are: its BG-Gap is the Backgrounds Challenge's
    proc = run_cli("eval", "--model", MODEL, *OPTIONS, "--data", world["data"], "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["bg_gap"]["value"] == pytest.approx(-in9_gap(as_is))

    proc = run_cli("analyze", "shortcuts", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (block,) = json.loads(proc.stdout)["datasets"]
    (row,) = block["rows"]
    assert row["cells"]["in9_gap"]["value"] == pytest.approx(in9_gap(expected))
    assert row["cells"]["bg_gap"]["value"] == pytest.approx(-in9_gap(as_is))
    how = {c["key"]: c["preprocessing"] for c in block["columns"]}
    assert how["in9_gap"] == "Resize(256), CenterCrop(224)" and how["bg_gap"] == "as the dataset holds them"
    text = run_cli("analyze", "shortcuts", "--db", db).stdout
    assert "IN-9 gap: Resize(256), CenterCrop(224)" in text and "BG-Gap: as the dataset holds them" in text


def test_gap_formula_on_a_hand_made_table():
    """2 of 4 right on MIXED-SAME, 1 of 4 on MIXED-RAND: an IN-9 gap of -25 points."""
    from bgbench.measures.arms import ArmRow
    from bgbench.measures.registry import get_measure
    table = [ArmRow(*r) for r in (("mixed_same", "a", 0, 0), ("mixed_same", "b", 1, 1), ("mixed_same", "c", 2, 0),
                                  ("mixed_same", "d", 3, -1), ("mixed_rand", "a", 0, 0), ("mixed_rand", "b", 1, 4),
                                  ("mixed_rand", "c", 2, 0), ("mixed_rand", "d", 3, 8))]
    s = get_measure("in9_gap").summarize(table, {"seed": 0})
    assert s.gap["value"] == pytest.approx(0.25 - 0.5) and s.gap["paired"]


def test_a_study_skips_it_on_a_dataset_without_the_mixed_folders():
    from bgbench.studies.plan import DatasetFacts, _unsupported
    facts = DatasetFacts("f", 10, ["original"], masks=False, attributes=False, kind="imagenet", imagenet=True)
    assert "mixed_same" in _unsupported("in9_gap", facts)
    assert _unsupported("in9_gap", DatasetFacts("f", 10, list(ARMS), masks=False, attributes=False)) is None
