"""The RIVAL10 release read as is (a tree written here in its exact format), its pickles read
without running them, 1000-class models through RIVAL10's tables or a --class-map file, and every
probe run on the tree."""
import base64
import io
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from bgbench.data.attr_dict import read_attr_dict
from bgbench.data.resolve import resolve_layout
from bgbench.errors import DataError
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli
from helpers.rival10_tree import ATTRS, CLASSES, WNIDS, image_masks, plant_hostile, write_rival10
from helpers.shared_pickles import deep_key_dict


@pytest.fixture(scope="module")
def rival_root(tmp_path_factory):
    return write_rival10(tmp_path_factory.mktemp("rival10"))


def _decode_as_rival10(b64: str) -> np.ndarray:
    """RIVAL10's save_uri_as_img, written out: base64 -> image -> 224 x 224 (PIL's bicubic) ->
    channels summed -> nonzero."""
    img = Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB")
    arr = np.asarray(img.resize((224, 224), Image.BICUBIC)).astype(np.int64)
    return arr.sum(axis=-1) != 0


# ----------------------------------------------------------------------------------------------
# the tables and the layout


def test_rival10s_tables_give_twenty_imagenet_classes_two_per_class():
    from timm.data import ImageNetInfo

    from bgbench.class_maps import rival10_class_map, rival10_classes
    assert rival10_classes() == CLASSES
    table = rival10_class_map().array()
    want = np.full(1000, -1)
    for cls, label, index in WNIDS.values():
        want[index] = label
    assert (table == want).all() and (table >= 0).sum() == 20
    info = ImageNetInfo()  # timm's own ImageNet-1k synsets: each WordNet id sits at its index
    assert all(info.index_to_label_name(index) == wnid for wnid, (_, _, index) in WNIDS.items())


def test_a_rival10_root_reads_as_a_layout_with_ids_labels_masks_and_attributes(rival_root):
    layout = resolve_layout(rival_root)
    assert layout.kind == "rival10" and layout.split == "test" and layout.classes == CLASSES
    assert layout.variants == ("original",)
    items = layout.items("original")
    assert len(items) == 20
    for it in items:
        wnid = it.path.name.split("_")[0]
        assert it.label == WNIDS[wnid][1] and it.image_id == f"{WNIDS[wnid][0]}/{it.path.stem}"
        assert it.size == (224, 224)
    assert resolve_layout(rival_root / "test").root == rival_root  # a split folder names the split
    pairs = dict((it.image_id, ref) for it, ref in layout.foregrounds())
    source = layout.attribute_source
    folder = rival_root / "test" / "ordinary"
    for k, wnid in enumerate(WNIDS):
        stem = f"{wnid}_1000"
        image_id = f"{WNIDS[wnid][0]}/{stem}"
        with open(folder / f"{stem}_attr_dict.pkl", "rb") as f:
            raw = pickle.load(f)  # the test's own tree: trusted
        obj = pairs[image_id].read((224, 224))
        assert (obj == _decode_as_rival10(raw["entire-object"])).all()
        if k == 0:  # stored 200 x 160: fed at 224 x 224, its masks resized with it
            assert Image.open(folder / f"{stem}.JPEG").size == (200, 160)
        else:
            assert (obj == image_masks(k)[0]).all()  # block-aligned masks survive JPEG exactly
        item = next(it for it in items if it.image_id == image_id)
        attrs = source.masks(item, (224, 224))
        want = {"wheels", "ears"} | ({"text"} if k % 2 == 0 else set())  # text: labelled absent on odd ones
        assert set(attrs) == want
        for name in want:
            assert (attrs[name] == _decode_as_rival10(raw[name])).all()
    assert set(source.names) == set(ATTRS) and len(source.names) == 18


def test_the_images_are_fed_at_224_as_rival10s_loader_feeds_them(rival_root):
    from bgbench.data.images import decode_item
    layout = resolve_layout(rival_root)
    odd = layout.items("original")[0]
    x = decode_item(odd)
    want = np.asarray(Image.open(odd.path).convert("RGB").resize((224, 224), Image.BILINEAR))
    assert x.shape == (224, 224, 3) and (x == want).all()


# ----------------------------------------------------------------------------------------------
# pickles: read, never run


def test_a_hostile_pickle_is_refused_and_never_run(tmp_path):
    root = write_rival10(tmp_path / "r", odd_size=False)
    target = tmp_path / "pwned"
    bad = plant_hostile(root, target)
    with pytest.raises(DataError, match="refused") as e:
        read_attr_dict(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    proc = run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", root, "--levels", "0.5", "--trials", "1",
                   "--db", tmp_path / "r.db", "--quiet")
    assert_one_line_error(proc, str(bad), "refused")
    assert not target.exists()
    pickle.loads(bad.read_bytes())  # the planted file does run code when loaded the ordinary way
    assert target.exists()


def test_a_pickled_key_is_named_by_its_type_never_rendered(tmp_path):
    path = tmp_path / "x_attr_dict.pkl"
    path.write_bytes(pickle.dumps({"k" * 1_000_000: 3}))
    with pytest.raises(DataError, match="refused .*: an entry a str is a str -> int") as e:
        read_attr_dict(path)
    assert len(str(e.value)) < 400


def test_a_pickle_of_nested_shared_references_is_refused_before_it_is_loaded(tmp_path):
    # 337 bytes whose key, forty tuples deep, loading hashes 2**40 times (hours): read in a child
    # process, so that a reader which loads it fails the test at the timeout instead of hanging it
    path = tmp_path / "x_attr_dict.pkl"
    path.write_bytes(deep_key_dict(40, "QUJD"))
    read = "import sys; from bgbench.data.attr_dict import read_attr_dict; read_attr_dict(sys.argv[1])"
    try:
        proc = subprocess.run([sys.executable, "-c", read, str(path)], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {path} ran past 30 s")
    assert "DataError: refused" in proc.stderr and "it builds 42 containers" in proc.stderr, proc.stderr


@pytest.mark.parametrize("content", [["a", "list"], {"entire-object": 3}, {1: "abc"}, {"a": {"nested": "x"}}],
                         ids=["list", "int-value", "int-key", "nested"])
def test_anything_but_a_dict_of_str_to_str_or_bytes_is_refused(tmp_path, content):
    path = tmp_path / "x_attr_dict.pkl"
    path.write_bytes(pickle.dumps(content))
    with pytest.raises(DataError, match="refused"):
        read_attr_dict(path)
    ok = tmp_path / "ok_attr_dict.pkl"
    ok.write_bytes(pickle.dumps({"wings": "QUJD", "ears": b"QUJD"}, protocol=4))
    assert read_attr_dict(ok) == {"wings": "QUJD", "ears": b"QUJD"}


# ----------------------------------------------------------------------------------------------
# 1000-class models: RIVAL10's tables, --class-map files


class _Constant(torch.nn.Module):
    """1000 logits, the same for every image: 675 (moving van: truck) is the argmax, while 11 and
    12 (goldfinch, house finch: bird) together hold more probability (e^4.5 + e^4.5 > e^5)."""

    def forward(self, x):
        out = torch.full((x.shape[0], 1000), -20.0)
        out[:, 675], out[:, 11], out[:, 12] = 5.0, 4.5, 4.5
        return out


def _constant_model(tmp_path):
    path = tmp_path / "const.pt2"
    any_size = {0: torch.export.Dim.AUTO, 2: torch.export.Dim.AUTO, 3: torch.export.Dim.AUTO}
    torch.export.save(torch.export.export(_Constant(), (torch.zeros(2, 3, 32, 32),), dynamic_shapes=(any_size,)),
                      str(path))
    return f"file:{path}"


def test_a_1000_class_model_reads_rival10_through_its_tables(rival_root, tmp_path):
    from bgbench.probing.tables import stored_predictions
    model, db = _constant_model(tmp_path), tmp_path / "r.db"
    proc = run_cli("eval", "--model", model, "--data", rival_root, "--json", "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["accuracy"]["original"]["value"] == pytest.approx(2 / 20)  # 2 trucks among 20 images
    with Store(db) as store:
        config = json.loads(store.get_run(doc["run_id"])["config"])
        assert config["class_map"]["name"] == "rival10"
        assert sorted(config["class_map"]["imagenet_classes"]["0"]) == [675, 867]
        argmax = stored_predictions(store, doc["run_id"])["original"]
        superclass = stored_predictions(store, doc["run_id"], mapping="superclass")["original"]
    assert set(argmax.preds.tolist()) == {0} and set(superclass.preds.tolist()) == {9}  # truck; bird by mass


def test_any_dataset_takes_a_class_map_file_and_records_it(synth_root, tmp_path):
    model, db = _constant_model(tmp_path), tmp_path / "r.db"
    refused = run_cli("eval", "--model", model, "--data", synth_root, "--variants", "original", "--db", db)
    assert_one_line_error(refused, "--class-map")
    cmap = tmp_path / "map.json"
    cmap.write_text(json.dumps({"675": "01_square", "11": "05_star"}))
    proc = run_cli("eval", "--model", model, "--data", synth_root, "--variants", "original", "--class-map", cmap,
                   "--json", "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["accuracy"]["original"]["value"] == pytest.approx(1 / 9)  # every image called a square
    with Store(db) as store:
        recorded = json.loads(store.get_run(doc["run_id"])["config"])["class_map"]
    assert recorded["name"] == f"file:{cmap.resolve()}"
    assert recorded["imagenet_classes"]["1"] == [675] and recorded["imagenet_classes"]["5"] == [11]
    cmap.write_text(json.dumps({"675": "99_nothing"}))
    assert_one_line_error(run_cli("eval", "--model", model, "--data", synth_root, "--class-map", cmap, "--db", db),
                          "99_nothing")
    cmap.write_text(json.dumps({"1000": "01_square"}))
    assert_one_line_error(run_cli("eval", "--model", model, "--data", synth_root, "--class-map", cmap, "--db", db),
                          "0-999")
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--class-map", cmap,
                                  "--db", db), "--class-map")  # a 9-class model has no ImageNet outputs to map


# ----------------------------------------------------------------------------------------------
# every probe runs on the tree


def test_every_probe_runs_on_a_rival10_tree(rival_root, tmp_path):
    import timm
    sd = tmp_path / "r10.pt"
    torch.save(timm.create_model("test_resnet", num_classes=10).state_dict(), sd)
    db = tmp_path / "r.db"
    common = ["--model", "timm:test_resnet", "--checkpoint", sd, "--data", rival_root, "--db", db, "--quiet",
              "--json", "--batch-size", "8"]
    docs = {}
    for probe, extra in (("noise", ["--levels", "0.5", "--trials", "1", "--region", "attributes"]),
                         ("saliency", ["--examples", "0"]), ("ablate", []), ("attribution", ["--top", "2"]),
                         ("features", ["--top-features", "2", "--top-images", "2", "--galleries", "0",
                                       "--group-by", "label", "--out", tmp_path / "features"])):
        proc = run_cli("probe", probe, *common, *extra)
        assert proc.returncode == 0, f"{probe}: {proc.stderr}"
        docs[probe] = json.loads(proc.stdout)
    with Store(db) as store:
        noise = [dict(r) for r in store.probe_rows("probe_noise", docs["noise"]["run_id"])]
        ablate = [dict(r) for r in store.probe_rows("probe_ablate", docs["ablate"]["run_id"])]
    # every image has wheels and ears, the even ones text: 20 + 20 + 10 attribute rows, plus fg and bg
    count = {}
    for r in noise:
        count[r["region"]] = count.get(r["region"], 0) + 1
    assert count == {"fg": 20, "bg": 20, "attr:wheels": 20, "attr:ears": 20, "attr:text": 10}
    assert {r["region"] for r in ablate} == {"none", "fg", "bg", "attr:wheels", "attr:ears", "attr:text"}
    assert len(ablate) == 20 * 5 + 10
    assert docs["saliency"]["images"] == 20
    assert set(docs["attribution"]["best"]) == {"wheels", "ears", "text"}
    with Store(db) as store:  # grouped by label, the features probe ranks features for each of the 10 classes
        features = [dict(r) for r in store.probe_rows("probe_features", docs["features"]["run_id"])]
    assert sorted({r["class_index"] for r in features}) == list(range(10))
    assert all(0 <= r["bg_area"] <= 1 for r in features)
