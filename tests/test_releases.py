"""The ImageNet-E and CounterAnimal releases read as laid out and scored as their papers define it.

Neither release comes with code of its authors that reads it, and CounterAnimal's have published no
scoring code at all, so each oracle here is written from the definitions alone, independently of
bgbench: which files the third-party code that reads the release opens and how it labels them, and
the paper's metric over the model's stored per-image predictions.

- ImageNet-E (Li et al., CVPR 2023): the reading of gabrielkasmi/spectral-attribution
  (`utils/helpers.py` `retrieve_edited_samples`: every folder but `ori` and `full` holds
  '<stem>.png', those two '<stem>.JPEG'; `scripts/*.py` `read_label`: labels.txt lines split at a
  tab), and the paper's Table 1 and Eq. 8 (top-1 per level; DA = acc_original − acc): `imagenet_e_oracle`,
  `table1`;
- CounterAnimal (Wang et al., NeurIPS 2024): the third-party loaders' reading (label = the integer
  before the class folder's first space; the one `common-*` and one `counter-*` folder of each
  class) and the paper's gap, common minus counter accuracy, per class and over all images:
  `counteranimal_oracle`, `gaps`.
"""
import json
import os
from pathlib import Path

import pytest
import torch
from torch import nn

import bgbench
from bgbench.class_maps import IMAGENET1K
from bgbench.data.resolve import resolve_layout
from bgbench.errors import DataError
from bgbench.models.spec import BgModel, ModelSpec
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli
from helpers.release_trees import (COUNTERANIMAL_CLASSES, IMAGENET_E_FOLDERS, IMAGENET_E_IMAGES, counteranimal_tree,
                                   imagenet_e_tree)

#: Table 1's columns in the paper's order, as the release's folders name them: the background
#: levels (inversion at λ = 0, λ = −20, λ = 20, λ = 20 adversarial, a random background), the object
#: sizes (full, pixel rates 0.1, 0.08, 0.05), position and direction.
#: Each folder with its column and the variant bgbench is to name it (the name `bgbench edit` gives
#: the same level), written here so that a swapped folder in bgbench's own table fails.
TABLE1 = {"ori": ("Ori", "original"), "rec": ("Inver", "complexity_0"), "20_smooth": ("λ=-20", "complexity_-20"),
          "20_hard": ("λ=20", "complexity_20"), "20_adv": ("λ=20-adv", "complexity_adv"),
          "random_bg": ("Random bg", "background_random"), "full": ("Full", "size_full"), "01": ("0.1", "size_0.1"),
          "008": ("0.08", "size_0.08"), "005": ("0.05", "size_0.05"), "rp": ("rp", "position_random"),
          "rd": ("rd", "rotation_random")}
FOLDER_OF = {variant: folder for folder, (_, variant) in TABLE1.items()}


class ChannelLinear(nn.Module):
    """Logits from the image's channel means: a decision that varies with the pixels."""

    def __init__(self, weight, bias):
        super().__init__()
        self.lin = nn.Linear(3, weight.shape[0])
        with torch.no_grad():
            self.lin.weight.copy_(weight)
            self.lin.bias.copy_(bias)

    def forward(self, x):
        return self.lin(x.mean(dim=(2, 3)))


def imagenet_model(live) -> BgModel:
    """A 1000-class model whose top class is always one of `live` (the trees' classes and a few
    others), so it is right on some images and wrong on others."""
    g = torch.Generator().manual_seed(1)
    weight, bias = torch.zeros(1000, 3), torch.full((1000,), -50.0)
    live = sorted(set(live) | {0, 1, 2})
    weight[live] = 30 * torch.randn(len(live), 3, generator=g)
    bias[live] = torch.randn(len(live), generator=g)
    spec = ModelSpec(name="toy:imagenet", arch="toy", num_classes=1000, label_space=IMAGENET1K,
                     mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    return BgModel(ChannelLinear(weight, bias), spec).eval()


@pytest.fixture(scope="module")
def imagenet_e(tmp_path_factory) -> Path:
    return imagenet_e_tree(tmp_path_factory.mktemp("in-e") / "ImageNet-E")


@pytest.fixture(scope="module")
def counteranimal(tmp_path_factory) -> Path:
    return counteranimal_tree(tmp_path_factory.mktemp("ca"), {"common": 6, "counter": 4})


# -- ImageNet-E ------------------------------------------------------------------------------------

def imagenet_e_oracle(root: Path) -> dict:
    """folder -> [(path, ImageNet index)] as the code that reads the release opens them: labels.txt
    split into lines and each at its tab (`read_label`), the file name less its '.JPEG' (`name[:-5]`),
    '<stem>.JPEG' in ori/ and full/ and '<stem>.png' in every other folder (`retrieve_edited_samples`)."""
    rows = [line.split("\t") for line in (root / "labels.txt").read_text().split("\n")]
    labels = [(name[:-5], int(label)) for name, label in rows]
    kinds = [k for k in os.listdir(root) if k not in ("vis.py", "labels.txt", "eval.py")]
    return {k: [(root / k / f"{stem}{'.JPEG' if k in ('ori', 'full') else '.png'}", label) for stem, label in labels]
            for k in kinds}


def table1(right: dict) -> dict:
    """Table 1 from each folder's per-image top-1 hits: each level's top-1 accuracy and its dropped
    accuracy DA = acc_original − acc (Eq. 8)."""
    acc = {k: sum(v) / len(v) for k, v in right.items()}
    return {k: (acc[k], acc["ori"] - acc[k]) for k in acc}


def test_imagenet_e_is_read_as_the_code_that_reads_it_does(imagenet_e):
    layout = resolve_layout(imagenet_e)
    assert layout.kind == "imagenet_e" and len(layout.variants) == len(TABLE1) == 12
    source = imagenet_e_oracle(imagenet_e)
    assert sorted(source) == sorted(IMAGENET_E_FOLDERS)
    for variant in layout.variants:
        ours = [(it.path, it.label) for it in layout.items(variant)]
        assert ours == source[FOLDER_OF[variant]], variant
        assert [it.image_id for it in layout.items(variant)] == list(IMAGENET_E_IMAGES)  # one id per image everywhere
    # the variants name the levels as bgbench's own edits do, in Table 1's order
    assert [FOLDER_OF[v] for v in layout.variants] == list(TABLE1)
    assert layout.variants[:1] == ("original",) and "size_0.05" in layout.variants and "complexity_-20" in layout.variants


def test_imagenet_e_is_scored_as_table_1(imagenet_e, tmp_path, one_thread):
    db = tmp_path / "r.db"
    report = bgbench.evaluate(imagenet_model(IMAGENET_E_IMAGES.values()), imagenet_e, progress=False)
    run_id = bgbench.record(report, db)
    with Store(db) as store:
        stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
        preds = {FOLDER_OF[v]: {r["image_id"]: (r["label"], r["pred"]) for r in store.predictions(run_id, v)}
                 for v in FOLDER_OF}
    source = imagenet_e_oracle(imagenet_e)
    # top-1 hit of each image the code reads: the stored prediction (ImageNet's own index) is its label
    right = {k: [preds[k][path.stem][1] == label for path, label in files] for k, files in source.items()}
    expected = table1(right)
    drops = bgbench.analyze("edits", db, [run_id])
    by_variant = {lv.variant: lv for lv in drops.levels}
    assert drops.original.value == pytest.approx(expected["ori"][0], abs=1e-12)
    for variant, folder in FOLDER_OF.items():
        assert stored[("accuracy", variant)] == pytest.approx(expected[folder][0], abs=1e-12), folder
        if variant != "original":
            assert by_variant[variant].drop.value == pytest.approx(expected[folder][1], abs=1e-12), folder
            assert by_variant[variant].acc.value == pytest.approx(expected[folder][0], abs=1e-12), folder
    assert len({round(a, 6) for a, _ in expected.values()}) > 1  # the levels differ: the check can fail
    assert 0 < expected["ori"][0] < 1


def test_the_scorecard_shows_imagenet_e_and_counteranimal_headlines(imagenet_e, counteranimal, tmp_path, one_thread):
    db = tmp_path / "r.db"
    live = [*IMAGENET_E_IMAGES.values(), *(c[0] for c in COUNTERANIMAL_CLASSES)]
    model = imagenet_model(live)
    for root in (imagenet_e, counteranimal):
        bgbench.record(bgbench.evaluate(model, root, progress=False), db)
    from bgbench.reporting.context import ReportContext, select_subjects
    from bgbench.reporting.scorecard import scorecard
    with Store(db) as store:
        data = scorecard(ReportContext(store=store, out=tmp_path / "sc", subjects=select_subjects(store)))
        metrics = {r["id"]: {(m["name"], m["variant"]): m["value"] for m in store.metrics(r["id"])}
                   for r in store.runs()}
    titles = {g["name"]: [c["title"] for c in g["columns"]] for g in data["groups"]}
    e_titles = titles["ImageNet-E"]
    assert "top-1 size_0.05" in e_titles and "size_0.05 drop" in e_titles and "clean" in e_titles
    assert {"common − counter", "common", "counter"} <= set(titles[counteranimal.name])
    group = next(g for g in data["groups"] if g["name"] == counteranimal.name)
    cells = data["rows"][0]["cells"][data["groups"].index(group)]
    gap = cells[[c["title"] for c in group["columns"]].index("common − counter")]
    assert gap["value"] == pytest.approx(metrics[gap["run"]][("counter_gap", "")], abs=1e-12)


@pytest.mark.parametrize("damage, needle", [
    ("missing", "is missing"),
    ("unlabelled", "not listed in"),
    ("bad line", "expected '<image file name><TAB><ImageNet class index 0-999>'"),
    ("outside", "leads outside the dataset root"),
])
def test_a_damaged_imagenet_e_release_is_one_line(tmp_path, damage, needle):
    root = imagenet_e_tree(tmp_path / "ImageNet-E", folders=("ori", "005", "rp"))
    if damage == "missing":
        (root / "005" / "ILSVRC2012_val_00000003.png").unlink()
    elif damage == "unlabelled":
        (root / "rp" / "ILSVRC2012_val_00000099.png").write_bytes((root / "rp" / "ILSVRC2012_val_00000001.png")
                                                                   .read_bytes())
    elif damage == "bad line":
        (root / "labels.txt").write_text((root / "labels.txt").read_text() + "\nILSVRC2012_val_00000020.JPEG 12")
    else:
        secret = tmp_path / "secret.png"
        secret.write_bytes((root / "rp" / "ILSVRC2012_val_00000001.png").read_bytes())
        (root / "rp" / "ILSVRC2012_val_00000001.png").unlink()
        (root / "rp" / "ILSVRC2012_val_00000001.png").symlink_to(secret)
    with pytest.raises(DataError, match="") as e:
        resolve_layout(root)
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert_one_line_error(run_cli("eval", "--model", "timm:resnet18", "--data", root), needle)


def test_the_release_s_labels_name_files_not_paths(tmp_path):
    root = imagenet_e_tree(tmp_path / "ImageNet-E", folders=("ori", "rd"))
    (root / "labels.txt").write_text("../../etc/passwd\t3")
    with pytest.raises(DataError, match="names a path"):
        resolve_layout(root)


# -- CounterAnimal ---------------------------------------------------------------------------------

def counteranimal_oracle(final: Path, group: str) -> list:
    """(path, label) of every image of `group` as the third-party loaders read LAION-final: each class
    folder in sorted order, its label the integer before the first space, the one subfolder whose name
    starts with '<group>-', its files in sorted order."""
    out = []
    for cls in sorted(os.listdir(final)):
        if not (final / cls).is_dir():
            continue
        label = int(cls.split(" ")[0])
        (sub,) = [d for d in os.listdir(final / cls) if d.startswith(f"{group}-")]
        out += [(final / cls / sub / f, label) for f in sorted(os.listdir(final / cls / sub))]
    return out


def gaps(right: dict) -> tuple:
    """The paper's gap from per-image hits {group: {class folder: [hit, ...]}}: accuracy on the common
    group minus on the counter group, over all images and per class."""
    def acc(values):
        return sum(values) / len(values)
    overall = acc([h for hits in right["common"].values() for h in hits]) - \
        acc([h for hits in right["counter"].values() for h in hits])
    return overall, {c: acc(right["common"][c]) - acc(right["counter"][c]) for c in right["common"]}


def test_counteranimal_is_read_as_its_loaders_read_it(counteranimal):
    for data in (counteranimal, counteranimal / "LAION-final"):  # the folder holding LAION-final, or itself
        layout = resolve_layout(data)
        assert layout.kind == "counteranimal" and layout.variants == ("common", "counter")
        for group in layout.variants:
            ours = [(it.path, it.label) for it in layout.items(group)]
            assert ours == counteranimal_oracle(counteranimal / "LAION-final", group)
    assert {it.label for it in layout.items("common")} == {100, 296, 291}
    assert len(layout.items("common")) == 18 and len(layout.items("counter")) == 12


def test_counteranimal_gap_is_the_papers_common_minus_counter(counteranimal, tmp_path, one_thread):
    db = tmp_path / "r.db"
    report = bgbench.evaluate(imagenet_model(c[0] for c in COUNTERANIMAL_CLASSES), counteranimal, progress=False)
    run_id = bgbench.record(report, db)
    with Store(db) as store:
        stored = {(m["name"], m["variant"]): m for m in store.metrics(run_id)}
        preds = {g: {r["image_id"]: r["pred"] for r in store.predictions(run_id, g)} for g in ("common", "counter")}
    final = counteranimal / "LAION-final"
    right = {}
    for group in ("common", "counter"):
        for path, label in counteranimal_oracle(final, group):
            image_id = "/".join(path.relative_to(final).parts)
            right.setdefault(group, {}).setdefault(path.parent.parent.name, []).append(preds[group][image_id] == label)
    overall, per_class = gaps(right)
    assert stored[("counter_gap", "")]["value"] == pytest.approx(overall, abs=1e-12)
    for cls, gap in per_class.items():
        assert stored[("counter_gap_class", cls)]["value"] == pytest.approx(gap, abs=1e-12), cls
    assert len({round(g, 6) for g in per_class.values()}) > 1  # classes differ: the check can fail
    lo, hi = stored[("counter_gap", "")]["lo"], stored[("counter_gap", "")]["hi"]
    assert lo <= overall <= hi
    assert report.to_dict()["counter_gap"]["gap"]["value"] == pytest.approx(overall, abs=1e-12)
    assert f"counter_gap={100 * overall:.1f}%" in run_cli("runs", "--db", db).stdout  # the run's headline
    from bgbench.runs import stored_report
    with Store(db) as store:
        again = stored_report(store, run_id)
    assert again.counter_gap.overall.value == pytest.approx(overall, abs=1e-12)  # a pure function of the rows


@pytest.mark.parametrize("damage, needle", [
    ("no counter", "one counter-<background> folder"),
    ("two common", "one common-<background> folder"),
    ("bad class", "'<ImageNet index 0-999> <name>'"),
    ("not an image", "hold only images"),
    ("outside", "leads outside the dataset root"),
])
def test_a_damaged_counteranimal_is_one_line(tmp_path, damage, needle):
    root = counteranimal_tree(tmp_path / "ca", {"common": 2, "counter": 2})
    final = root / "LAION-final"
    bear = final / "296 ice bear"
    if damage == "no counter":
        for f in (bear / "counter-grass").iterdir():
            f.unlink()
        (bear / "counter-grass").rmdir()
    elif damage == "two common":
        (bear / "common-ice").mkdir()
    elif damage == "bad class":
        (final / "1296 ice bear").mkdir()
        (final / "1296 ice bear" / "common-snow").mkdir()
    elif damage == "not an image":
        (bear / "common-snow" / "notes.txt").write_text("x")
    else:
        secret = tmp_path / "secret.jpg"
        secret.write_bytes((bear / "common-snow" / "0000.jpg").read_bytes())
        (bear / "common-snow" / "0001.jpg").unlink()
        (bear / "common-snow" / "0001.jpg").symlink_to(secret)
    with pytest.raises(DataError) as e:
        resolve_layout(root)
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert_one_line_error(run_cli("eval", "--model", "timm:resnet18", "--data", root), needle)


def test_the_stored_counter_gap_reads_back_in_json(counteranimal, tmp_path, one_thread):
    report = bgbench.evaluate(imagenet_model(c[0] for c in COUNTERANIMAL_CLASSES), counteranimal, progress=False)
    doc = json.loads(json.dumps(report.to_dict()))
    assert [c["class"] for c in doc["counter_gap"]["per_class"]] == sorted(f"{i} {n}" for i, n, _, _ in
                                                                           COUNTERANIMAL_CLASSES)


def _paired_drop(rows: dict, level: str) -> float:
    """Eq. 8 over the images both ORIGINAL and the level hold: acc_original − acc_level."""
    shared = [i for i in rows[level] if i in rows["original"]]
    return (sum(rows["original"][i] for i in shared) - sum(rows[level][i] for i in shared)) / len(shared)


def test_the_release_sits_beside_bgbench_s_own_edits_in_one_table(imagenet_e, synth_root, tmp_path, one_thread):
    out = tmp_path / "own-edits"
    made = run_cli("edit", "--data", synth_root, "--out", out, "--levels", "size_0.05", "position_random", "--quiet")
    assert made.returncode == 0, made.stderr
    db = tmp_path / "r.db"
    model = imagenet_model([*IMAGENET_E_IMAGES.values(), *range(151, 160), *range(7, 25)])
    release = bgbench.record(bgbench.evaluate(model, imagenet_e, progress=False), db)
    folders = sorted(p.name for p in (out / "original" / "val").iterdir())
    class_map = tmp_path / "map.json"  # the model's classes 7-15 read as Synthetic-9's nine shapes
    class_map.write_text(json.dumps({str(7 + k): folder for k, folder in enumerate(folders)}))
    own = bgbench.record(bgbench.evaluate(model, out, progress=False, class_map=class_map), db)
    table = bgbench.analyze("edits", db, [release, own])
    assert [name for name, _ in table.datasets] == ["ImageNet-E (ImageNet-E release)", "own-edits"]
    with Store(db) as store:
        hits = {rid: {} for rid in (release, own)}
        for rid in hits:
            for r in store.predictions(rid):
                hits[rid].setdefault(r["variant"], {})[r["image_id"]] = r["pred"] == r["label"]
    rows = {(r["data"], r["variant"]): r for r in table.table()}
    for (name, _), rid in zip(table.datasets, (release, own)):
        for level in ("size_0.05", "position_random"):
            assert rows[(name, level)]["drop"] == pytest.approx(_paired_drop(hits[rid], level), abs=1e-12)
    assert ("ImageNet-E (ImageNet-E release)", "rotation_random") in rows and ("own-edits", "rotation_random") not in rows
    text = table.text().splitlines()
    line = next(x for x in text if x.startswith("size_0.05"))
    assert "0.05" in line and line.count("[") == 2  # one row, both datasets' drops with their intervals
    doc = json.loads(run_cli("analyze", "edits", release, own, "--db", db, "--json").stdout)
    assert [d["data"] for d in doc["models"][0]["datasets"]] == [name for name, _ in table.datasets]


def test_a_profile_over_both_releases_ends_with_their_scorecard_columns(imagenet_e, counteranimal, tmp_path,
                                                                        monkeypatch):
    """A 1000-class timm model (published weights from a hand-written hub cache) profiled on both
    releases by their paths: eval runs on each, the probes are skipped with their reason (no masks),
    and the scorecard has each release's columns, each cell the stored metric of its run."""
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    db = tmp_path / "r.db"
    proc = run_cli("profile", "--model", f"timm:{TAG}", "--data", imagenet_e, "--data", counteranimal, "--measures",
                   "eval", "noise", "--out", tmp_path / "p", "--db", db, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    skips = {(s["dataset"], s["measure"]): s["skip"] for s in doc["steps"]}
    assert skips[(imagenet_e.name, "eval")] is None and skips[(counteranimal.name, "eval")] is None
    assert "no foreground masks" in skips[(imagenet_e.name, "noise")]
    cells = {(c["dataset"], c["title"]): c for c in doc["scorecard"] if c["value"] is not None}
    wanted = {(imagenet_e.name, "clean"): ("accuracy", "original"),
              (imagenet_e.name, "top-1 size_0.05"): ("accuracy", "size_0.05"),
              (counteranimal.name, "common − counter"): ("counter_gap", ""),
              (counteranimal.name, "counter"): ("accuracy", "counter")}
    with Store(db) as store:
        for column, metric in wanted.items():
            stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(cells[column]["run"])}
            assert cells[column]["value"] == stored[metric], column
    assert (imagenet_e.name, "size_0.05 drop") in cells and not cells[(counteranimal.name, "common − counter")][
        "higher_is_better"]
    html = (tmp_path / "p" / "index.html").read_text()
    assert ">common − counter &darr;</th>" in html and ">top-1 size_0.05 &uarr;</th>" in html


def test_a_zero_shot_head_on_a_release_prompts_imagenet_s_classes(counteranimal, tmp_path):
    """The releases' classes are ImageNet's 1000: a CLIP head prompts ImageNet's class names, not
    the wnids or the folder names."""
    from helpers.foundation_models import tiny_clip
    clip = f"openclip:{tiny_clip(tmp_path / 'clip')}"
    proc = run_cli("eval", "--model", clip, "--data", counteranimal, "--db", tmp_path / "r.db", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    with Store(tmp_path / "r.db") as store:
        spec = json.loads(store.get_run(json.loads(proc.stdout)["run_id"])["spec"])
    assert spec["num_classes"] == 1000 and spec["label_space"] == IMAGENET1K
    names = spec["extra"]["zero_shot"]["class_names"]  # open_clip's names of ImageNet's classes, by index
    assert (names[100], names[291], names[296]) == ("black swan", "lion", "polar bear")
    assert "counter_gap" in json.loads(proc.stdout)


def test_a_study_names_the_releases_by_their_labels(imagenet_e, counteranimal, tmp_path, monkeypatch):
    """In a study file each release is a dataset with a label, and a measure's `datasets` names
    them: eval runs on both, and the scorecard's column groups carry the labels."""
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    study = tmp_path / "study.toml"
    study.write_text(f'models = ["timm:{TAG}"]\n'
                     f'datasets = [{{path = "{imagenet_e}", label = "imagenet-e"}}, '
                     f'{{path = "{counteranimal}", label = "counteranimal"}}]\n'
                     '[measures.eval]\ndatasets = ["imagenet-e", "counteranimal"]\n'
                     f'[report]\nout = "{tmp_path / "report"}"\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    cells = {(c["dataset"], c["title"]): c["value"] for c in json.loads(proc.stdout)["scorecard"]}
    assert cells[("imagenet-e", "top-1 size_0.05")] is not None and cells[("counteranimal", "common − counter")] \
        is not None
