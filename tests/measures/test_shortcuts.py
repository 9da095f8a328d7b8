"""The shortcut measures against their sources' own code, on ImageNet-style trees the test writes.

- watermark: the test's own `imagenet_w.AddWatermark` on torchvision's ImageNet crop, then a plain
  forward of the network, gives every stored prediction; the gaps are Whac-A-Mole's formulas
  (`eval_multiple_shortcuts.py`), worked here from the test's own predictions;
- renditions: the test's `output[:, mask].argmax(1)` (ImageNet-R's `map_prediction`) on its own
  ImageFolder reads of ImageNet-R and ImageNet-200;
- texture: acc(SIN) - acc(val), paired by file stem;
- imagenet_x: the `imagenet-x` package's own functions on the same predictions, the val tree named
  with real ImageNet val file names from the package's annotations;
- the shortcut table and a derived model's paired changes.

The model is a timm tag loaded through a Hugging Face cache the test writes (offline), at
`--resize none` so that the oracle feeds the network the 224-px crop as bgbench does.
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import run_cli
from helpers import imagenet_val
from helpers.hub_cache import TAG, tag_network, use_offline_hub, write_timm_weights

MODEL = f"timm:{TAG}"


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagenet")
    truth = imagenet_val.write_val(root / "tv", "torchvision")
    imagenet_val.write_val(root / "ilsvrc", "ilsvrc")
    imagenet_val.write_class_folders(root / "r")
    imagenet_val.write_stylized(root / "sin", root / "tv")
    _, state = write_timm_weights(root / "hf")
    return {"root": root, "truth": truth, "state": state}


@pytest.fixture()
def hub(trees, monkeypatch):
    return use_offline_hub(monkeypatch, trees["root"] / "hf")


def crop(path: Path):
    """torchvision's ImageNet evaluation transform, as Whac-A-Mole and ImageNet-X read val."""
    from PIL import Image
    from torchvision import transforms
    t = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
    return t(Image.open(path).convert("RGB"))


def logits(net, x):
    """The stand-in tag's normalization (mean = std = 0.5) and a plain forward."""
    with torch.no_grad():
        return net((x.unsqueeze(0) - 0.5) / 0.5)[0]


def probe(name: str, db: Path, *args) -> dict:
    proc = run_cli("probe", name, "--model", MODEL, "--resize", "none", "--db", db, "--json", "--quiet", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def rows(db: Path, table: str, run_id: int):
    from bgbench.store import Store
    with Store(db) as store:
        return [dict(r) for r in store.probe_rows(table, run_id)]


def test_imagenet_val_reads_alike_from_either_release_layout(trees):
    from bgbench.data.resolve import resolve_layout
    tv, ilsvrc = (resolve_layout(trees["root"] / name) for name in ("tv", "ilsvrc"))
    for layout in (tv, ilsvrc):
        items = layout.items("original")
        assert {it.image_id: it.label for it in items} == trees["truth"]  # file names, ImageNet's indices
        assert len(layout.classes) == 1000 and layout.image_hw() == (224, 224)
    assert tv.fingerprint() == ilsvrc.fingerprint()


def test_eval_imagenet_stores_each_prediction_under_its_file_name(trees, hub, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("eval", "--model", MODEL, "--resize", "none", "--imagenet", trees["root"] / "ilsvrc", "--db", db,
                   "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    from bgbench.store import Store
    with Store(db) as store:
        stored = {r["image_id"]: r["pred"] for r in store.predictions(doc["run_id"])}
    net = tag_network(trees["state"])
    folder = trees["root"] / "ilsvrc" / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    expected = {name: int(logits(net, crop(folder / name)).argmax()) for name in trees["truth"]}
    assert stored == expected
    acc = np.mean([expected[n] == c for n, c in trees["truth"].items()])
    assert doc["accuracy"]["original"]["value"] == pytest.approx(acc)


def test_eval_imagenet_refuses_a_root_that_is_not_imagenet(synth_root):
    proc = run_cli("eval", "--model", "timm:test_resnet", "--imagenet", synth_root)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "neither ImageNet layout" in proc.stderr


def test_watermark_equals_imagenet_w_then_a_plain_forward(trees, hub, tmp_path):
    import imagenet_w
    db = tmp_path / "w.db"
    doc = probe("watermark", db, "--data", trees["root"] / "tv")
    stored = {(r["arm"], r["image_id"]): r["pred"] for r in rows(db, "probe_watermark", doc["run_id"])}
    net = tag_network(trees["state"])
    mark = imagenet_w.AddWatermark(224)
    files = {p.name: p for p in (trees["root"] / "tv" / "val").rglob("*.JPEG")}
    preds = {}
    for name in trees["truth"]:
        x = crop(files[name])
        preds[("clean", name)] = int(logits(net, x).argmax())
        preds[("watermarked", name)] = int(logits(net, mark(x)).argmax())
    assert stored == preds
    # the random network answers alike with and without the mark, so the images themselves are
    # compared too: bgbench's watermarked input is, bit for bit, imagenet_w's on torchvision's crop
    from bgbench.data.resolve import resolve_layout
    from bgbench.data.images import decode_item
    from bgbench.variants.watermark import watermark_image
    for item in resolve_layout(trees["root"] / "tv").items("original")[::5]:
        mine = torch.from_numpy(watermark_image(decode_item(item))).permute(2, 0, 1).float().div(255)
        theirs = mark(crop(item.path))
        assert torch.equal(mine, theirs) and not torch.equal(theirs, crop(item.path))
    # Whac-A-Mole's formulas, from the test's own predictions
    labels = trees["truth"]
    acc = {arm: np.mean([preds[(arm, n)] == c for n, c in labels.items()]) for arm in ("clean", "watermarked")}
    carton = [n for n, c in labels.items() if c == imagenet_w.watermark_transform.CARTON_CLASS_INDEX]
    carton_acc = {arm: np.mean([preds[(arm, n)] == 478 for n in carton]) for arm in ("clean", "watermarked")}
    assert doc["gap"]["value"] == pytest.approx(acc["watermarked"] - acc["clean"])
    assert doc["extra"]["carton_gap"]["value"] == pytest.approx(carton_acc["watermarked"] - carton_acc["clean"])
    assert doc["extra"]["carton_gap"]["class"] == "n02971356"
    assert doc["gap"]["paired"] and doc["gap"]["lo"] <= doc["gap"]["value"] <= doc["gap"]["hi"]


def test_watermark_runs_on_an_in9_layout_and_names_the_carton_class(synth_root, tmp_path):
    db = tmp_path / "w.db"
    proc = run_cli("probe", "watermark", "--model", "timm:test_resnet", "--data", synth_root, "--db", db, "--json",
                   "--quiet", "--carton-class", "08_bar")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["accuracy"]["clean"]["n"] == doc["accuracy"]["watermarked"]["n"] == 36
    assert doc["extra"]["carton_gap"]["class"] == "08_bar" and doc["extra"]["carton_gap"]["n"] == 4
    bad = run_cli("probe", "watermark", "--model", "timm:test_resnet", "--data", synth_root, "--db", db,
                  "--carton-class", "09_nope")
    errors = [line for line in bad.stderr.splitlines() if not line.startswith("warning: timm:test_resnet has random")]
    assert bad.returncode != 0 and len(errors) == 1 and "--carton-class '09_nope'" in errors[0]


def test_renditions_equals_map_prediction_on_imagenet_r_and_imagenet_200(trees, hub, tmp_path):
    from bgbench.data.imagenet import imagenet_synsets
    db = tmp_path / "r.db"
    doc = probe("renditions", db, "--data", trees["root"] / "tv", "--renditions", trees["root"] / "r")
    stored = {(r["arm"], r["image_id"]): (r["label"], r["pred"]) for r in rows(db, "probe_renditions", doc["run_id"])}
    net = tag_network(trees["state"])
    wnids = sorted(p.name for p in (trees["root"] / "r").iterdir())  # ImageFolder's classes
    mask = torch.tensor([w in wnids for w in imagenet_synsets()])  # ImageNet-R's imagenet_r_mask
    expected = {}
    for label, wnid in enumerate(wnids):
        for p in sorted((trees["root"] / "r" / wnid).iterdir()):
            expected[("renditions", f"{wnid}/{p.name}")] = (label, int(logits(net, crop(p))[mask].argmax()))
        for p in sorted((trees["root"] / "tv" / "val" / wnid).iterdir()):
            expected[("imagenet_200", p.name)] = (label, int(logits(net, crop(p))[mask].argmax()))
    assert stored == expected
    acc = {arm: np.mean([v[0] == v[1] for k, v in expected.items() if k[0] == arm]) for arm in
           ("imagenet_200", "renditions")}
    assert doc["gap"]["value"] == pytest.approx(acc["renditions"] - acc["imagenet_200"]) and not doc["gap"]["paired"]


def test_a_models_renditions_run_lands_on_its_own_row_of_the_table(trees, hub, tmp_path):
    """The renditions run records ImageNet-R's 200-class map, the eval of the same val the 1000
    classes': one model, one row, carrying both numbers (it was a second row, as if another model)."""
    db = tmp_path / "t.db"
    proc = run_cli("eval", "--model", MODEL, "--resize", "none", "--imagenet", trees["root"] / "tv", "--db", db,
                   "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    accuracy = json.loads(proc.stdout)["accuracy"]["original"]["value"]
    gap = probe("renditions", db, "--data", trees["root"] / "tv", "--renditions", trees["root"] / "r")["gap"]["value"]
    from bgbench.store import Store
    with Store(db) as store:
        maps = {len(json.loads(r["config"])["class_map"]["imagenet_classes"]) for r in store.runs()}
    assert len(maps) == 2  # the two runs record two class maps
    proc = run_cli("analyze", "shortcuts", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (block,) = json.loads(proc.stdout)["datasets"]
    (row,) = block["rows"]
    assert row["cells"]["in1k_acc"]["value"] == pytest.approx(accuracy)
    assert row["cells"]["in_r_gap"]["value"] == pytest.approx(gap)
    assert row["model"].startswith(MODEL) and " [m" not in row["model"]  # its name, no subject key to tell it apart


def test_texture_is_the_sin_gap_paired_by_file_stem(trees, hub, tmp_path):
    db = tmp_path / "t.db"
    doc = probe("texture", db, "--data", trees["root"] / "tv", "--stylized", trees["root"] / "sin")
    net = tag_network(trees["state"])
    acc = {}
    for arm, folder, suffix in (("imagenet", trees["root"] / "tv", "*.JPEG"), ("stylized", trees["root"] / "sin",
                                                                               "*.png")):
        from bgbench.data.imagenet import imagenet_synsets
        index = {w: k for k, w in enumerate(imagenet_synsets())}
        acc[arm] = np.mean([int(logits(net, crop(p)).argmax()) == index[p.parent.name]
                            for p in (folder / "val").rglob(suffix)])
    assert doc["gap"]["value"] == pytest.approx(acc["stylized"] - acc["imagenet"]) and doc["gap"]["paired"]
    missing = run_cli("probe", "texture", "--model", MODEL, "--data", trees["root"] / "tv", "--stylized",
                      trees["root"] / "nope", "--db", db)
    assert missing.returncode != 0 and missing.stderr.strip().endswith("no such folder")


def test_imagenet_x_equals_the_package_on_the_same_predictions(trees, hub, tmp_path):
    import imagenet_x
    import pandas as pd
    db = tmp_path / "x.db"
    doc = probe("imagenet_x", db, "--data", trees["root"] / "ilsvrc")
    mine = rows(db, "probe_imagenet_x", doc["run_id"])
    predictions = pd.DataFrame({"file_name": [r["image_id"] for r in mine], "predicted_class": [r["pred"] for r in mine]})
    ann = imagenet_x.load_annotations()
    table = imagenet_x.augment_model_predictions(ann, {"m": predictions})
    acc = imagenet_x.compute_factor_accuracies(table, imagenet_x.FACTORS)
    ratio = imagenet_x.error_ratio(acc)
    for factor in imagenet_x.FACTORS:
        want = float(ratio[factor].iloc[0])
        got = doc["factors"][factor]["error_ratio"]["value"]
        assert (got is None and math.isnan(want)) or got == pytest.approx(want), factor
    assert doc["accuracy"]["value"] == pytest.approx(float(acc["average"].iloc[0]))


def test_imagenet_x_refuses_a_val_whose_names_do_not_match_its_annotations(trees, hub, tmp_path):
    import shutil
    bad = tmp_path / "val"
    shutil.copytree(trees["root"] / "tv", bad)
    first = sorted((bad / "val").rglob("*.JPEG"))[0]
    first.rename(first.with_name("holiday_photo.JPEG"))
    proc = run_cli("probe", "imagenet_x", "--model", MODEL, "--data", bad, "--db", tmp_path / "x.db")
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "holiday_photo.JPEG" in proc.stderr


def test_restricted_logits_is_map_prediction():
    from bgbench.class_maps import wnid_class_map
    from bgbench.classes import map_logits, restricted_logits
    from bgbench.data.imagenet import imagenet_synsets
    wnids = sorted(imagenet_synsets()[k] for k in (3, 17, 400, 999))
    cmap = wnid_class_map(wnids)
    out = torch.randn(64, 1000, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([w in wnids for w in imagenet_synsets()])
    pred, _ = map_logits(restricted_logits(out, cmap), "argmax", cmap)
    assert torch.equal(pred, out[:, mask].argmax(1))


def test_gap_formulas_on_hand_made_tables():
    """Whac-A-Mole's gap, worked by hand: 3 of 4 right clean, 1 of 4 watermarked: -50 points; the
    carton (label 7) 0 of 1 -> 1 of 1: +100 points."""
    from bgbench.measures.arms import ArmRow
    from bgbench.measures.registry import get_measure
    table = [ArmRow(*r) for r in (("clean", "a", 1, 1), ("clean", "b", 2, 2), ("clean", "c", 3, 0), ("clean", "d", 7, 7),
                                  ("watermarked", "a", 1, 7), ("watermarked", "b", 2, 7), ("watermarked", "c", 3, 0),
                                  ("watermarked", "d", 7, 7))]
    s = get_measure("watermark").summarize(table, {"carton": {"class": "x", "label": 7}, "seed": 0})
    assert s.gap["value"] == pytest.approx(0.25 - 0.75) and s.extra["carton_gap"]["value"] == 0.0
    table = [ArmRow("clean", "d", 7, 0)] + table[1:3] + [ArmRow("clean", "a", 1, 1), ArmRow("watermarked", "d", 7, 7)] \
        + table[4:7]
    s = get_measure("watermark").summarize(table, {"carton": {"class": "x", "label": 7}, "seed": 0})
    assert s.extra["carton_gap"]["value"] == pytest.approx(1.0)
    r = get_measure("renditions").summarize([ArmRow(*t) for t in (
        ("imagenet_200", "a", 0, 0), ("imagenet_200", "b", 1, 1), ("renditions", "x", 0, 1), ("renditions", "y", 1, 1),
        ("renditions", "z", 0, 1))], {"seed": 0})
    assert r.gap["value"] == pytest.approx(1 / 3 - 1) and not r.gap["paired"]


def test_a_derived_models_changes_name_the_shortcut_it_made_worse():
    """A fake store of two watermark runs on the same 40 images: the derived model loses 20 of its
    watermarked answers, so its gap falls 50 points, outside any interval: 'worse'."""
    from bgbench.measures.shortcuts.changes import gap_change, verdict
    from bgbench.measures.shortcuts.table import columns

    class Store:
        def probe_rows(self, table, run):
            out = []
            for i in range(40):
                out.append({"arm": "clean", "image_id": f"i{i}", "label": 1, "pred": 1})
                wrong = run == 2 and i < 20
                out.append({"arm": "watermarked", "image_id": f"i{i}", "label": 1, "pred": 0 if wrong else 1})
            return out
    change = gap_change(Store(), 1, 2, "watermark", None, seed=0)
    assert change["value"] == pytest.approx(-0.5) and change["hi"] < 0
    column = next(c for c in columns() if c.key == "in_w_gap")
    assert verdict(change, column) == "worse"
    assert verdict({**change, "value": 0.5, "lo": 0.3, "hi": 0.7}, column) == "better"
    assert verdict({**change, "lo": -0.1, "hi": 0.1}, column) == "no clear change"


def test_a_study_of_a_model_and_its_dfr_prints_the_table_and_reports_the_changes(synth_root, model_ckpt, tmp_path):
    """Synthetic-9 with its background shortcut and a watermark on one class; the ORIGINAL-trained
    model and its DFR head: the study prints the shortcut table with the DFR model's paired changes,
    and the report shows them. The changes are checked against the two runs' own rows."""
    import html
    dfr = tmp_path / "dfr"
    proc = run_cli("train", "--recipe", "dfr", "--model", f"file:{model_ckpt}", "--data", synth_root, "--out", dfr,
                   "--feature-cache", "none", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    study = tmp_path / "study.toml"
    study.write_text(f'''models = [{{model = "file:{model_ckpt}", label = "erm"}}, {{model = "file:{dfr / 'model.pt'}", label = "dfr"}}]
datasets = [{{path = "{synth_root}", label = "synth"}}]
[measures.eval]
[measures.watermark]
carton_class = "08_bar"
[measures.texture]
stylized = "{tmp_path / 'no-sin'}"
''')
    db = tmp_path / "s.db"
    proc = run_cli("study", study, "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "shortcut table" in out and "dfr against erm on synth (dfr of its backbone)" in out
    assert "texture" in out and "skipped: no Stylized-ImageNet at" in out and "not ImageNet's own images" in out
    from bgbench.store import Store
    with Store(db) as store:
        runs = {json.loads(r["spec"])["name"]: r["id"] for r in store.runs("probe_watermark")}
        evals = {json.loads(r["spec"])["name"]: r["id"] for r in store.runs("eval")}
    base, derived = runs[f"file:{model_ckpt}"], runs[f"file:{dfr / 'model.pt'}"]

    def gaps(run):
        rs = {(r["arm"], r["image_id"]): r["pred"] == r["label"] for r in rows(db, "probe_watermark", run)}
        ids = sorted({i for _, i in rs})
        return np.array([float(rs[("watermarked", i)]) - float(rs[("clean", i)]) for i in ids])
    change = float((gaps(derived) - gaps(base)).mean())
    proc = run_cli("analyze", "shortcuts", "--db", db, "--json")
    doc = json.loads(proc.stdout)
    (ch,) = doc["changes"]
    item = next(i for i in ch["items"] if i["key"] == "in_w_gap")
    assert item["value"] == pytest.approx(change) and item["lo"] <= item["value"] <= item["hi"]
    bg = next(i for i in ch["items"] if i["key"] == "bg_gap")
    from bgbench.comparing import compare_runs
    with Store(db) as store:
        assert bg["value"] == pytest.approx(compare_runs(store, evals[f"file:{dfr / 'model.pt'}"],
                                                         evals[f"file:{model_ckpt}"]).bg_gap_diff.value)
    page = html.unescape((tmp_path / "study-report" / "index.html").read_text())
    section = page[page.index('class="section-shortcuts"'):]
    assert "dfr against erm" in section and ch["summary"] in section


@pytest.mark.parametrize("name", ["watermark", "texture", "renditions", "imagenet_x"])
def test_each_keeps_the_contract_of_every_measure_on_imagenet(trees, hub, tmp_path, name):
    """What test_contract.py checks of every measure, here on ImageNet's images with a 1000-class model."""
    import bgbench
    from bgbench.measures.registry import get_measure
    from bgbench.store import Store
    from helpers import contract
    measure = get_measure(name)
    db = tmp_path / "c.db"
    extra = {"texture": ("--stylized", trees["root"] / "sin"), "renditions": ("--renditions", trees["root"] / "r")}
    printed = probe(name, db, "--data", trees["root"] / "ilsvrc", *extra.get(name, ()))
    with Store(db) as store:
        run_id = contract.check_recorded(store, measure, printed)
    contract.check_headline(run_cli, measure, db, run_id)
    report = bgbench.report(db, tmp_path / "site", progress=False)
    with Store(db) as store:
        contract.check_report(report, measure, store, run_id)
