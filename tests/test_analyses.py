"""Analyses over stored tables: each against a small table worked out by hand; none loads a model."""
import io
import json
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.stats import binomtest

from bgbench import recording
from bgbench.data import boxes as B
from bgbench.measures.boxsize.summary import binned_accuracy, quantile_bins
from bgbench.measures.categories.summary import CATEGORIES, categorize, prediction_categories
from bgbench.measures.compare.summary import compare_runs
from bgbench.measures.leakage.summary import leakage
from bgbench.measures.noise.rfs import relative_foreground_sensitivity as rfs
from bgbench.data.manifest import read_boxes
from bgbench.probing.tables import stored_predictions
from bgbench.errors import BgbenchError
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli

CLASSES = ["a", "b", "c"]


def _eval_run(store, table, classes=CLASSES, data_root=None):
    """An eval run from {variant: [(image_id, label, pred)]}."""
    rid = recording.start(store, recording.Provenance(kind="eval", config={"classes": classes, "split": "val"},
                                            data_root=data_root))
    rows = [(v, i, y, p, 0.5, None, None, None) for v, rs in table.items() for i, y, p in rs]
    store.insert("predictions", rid, rows)
    store.finish_run(rid)
    return rid


# (label, original, mixed_rand, only_bg_t) -> expected category, each case worked out by hand
HAND = [
    (0, 0, 0, 2, "BG Irrelevant"),   # full right, fg right
    (0, 1, 2, 0, "BG Irrelevant"),   # full wrong, fg wrong
    (1, 1, 0, 1, "BG Required"),     # full right, fg wrong, bg right
    (1, 1, 0, 2, "BG+FG Required"),  # full right, fg wrong, bg wrong
    (2, 0, 2, 0, "BG Fools"),        # full wrong (0), fg right, bg says 0 too
    (2, 1, 2, 0, "Other"),           # full wrong (1), fg right, bg says another wrong class
    (2, 1, 2, 2, "Other"),           # full wrong, fg right, bg right
]


def test_categorize_every_case_by_hand():
    y, o, m, b, want = zip(*HAND)
    got = categorize(np.array(y), np.array(o), np.array(m), np.array(b))
    assert [CATEGORIES[g] for g in got] == list(want)


# A 1000-class model under the argmax mapping: -1 is an ImageNet class that maps to no IN-9 class
# (281 tabby cat and 285 Egyptian cat are two of them). (label, original, mixed_rand, only_bg_t,
# raw top-1 on original, raw top-1 on only_bg_t) -> expected category, each worked out by hand.
UNMAPPED = [
    (0, -1, 0, -1, 285, 285, "BG Fools"),        # full wrong, fg right, bg: the very same unmapped class
    (0, -1, 0, -1, 285, 281, "Other"),           # two different unmapped classes are not "the same class"
    (0, -1, 0, 0, 285, 100, "Other"),            # full wrong, fg right, bg right
    (0, 1, 0, -1, 100, 285, "Other"),            # full says IN-9 class 1, bg an unmapped class
    (0, -1, 0, 1, 285, 100, "Other"),            # full unmapped, bg IN-9 class 1
    (0, -1, -1, -1, 285, 285, "BG Irrelevant"),  # full wrong, fg wrong (unmapped): as wrong as each other
    (0, -1, -1, 0, 285, 100, "BG Irrelevant"),
    (0, 0, -1, 0, 100, 100, "BG Required"),      # full right, fg unmapped (wrong), bg right
    (0, 0, -1, -1, 100, 285, "BG+FG Required"),  # full right, fg wrong, bg unmapped (wrong)
    (0, 0, 0, -1, 100, 285, "BG Irrelevant"),    # full right, fg right
]


def test_categorize_unmapped_predictions_by_hand():
    y, o, m, b, o_raw, b_raw, want = (np.array(c) for c in zip(*UNMAPPED))
    got = categorize(y, o, m, b, full_raw=o_raw, bg_raw=b_raw)
    assert [CATEGORIES[g] for g in got] == want.tolist()
    # without the raw classes two -1 predictions cannot be told apart, so no BG Fools is claimed
    assert CATEGORIES[categorize(y[:1], o[:1], m[:1], b[:1])[0]] == "Other"


def test_categories_of_a_stored_1000_class_run_compare_raw_classes(store):
    """Stored as `bgbench eval` stores a 1000-class model: pred -1 plus the raw top-5. Under the
    stored decisions and re-decided with --mapping argmax, the same unmapped class on the full
    image and the background is BG Fools, two different unmapped classes are Other."""
    raw = {"a/same": (285, 0, 285), "a/diff": (285, 0, 281)}  # original, mixed_rand, only_bg_t top-1
    rid = recording.start(store, recording.Provenance(kind="eval", config={"classes": list(CLASSES), "split": "val"}))
    rows = []
    for iid, tops in raw.items():
        for v, top in zip(("original", "mixed_rand", "only_bg_t"), tops):
            pred = 0 if top == 0 else -1  # ImageNet class 0 (tench) maps to IN-9 fish; call it class 0 here
            rows.append((v, iid, 0, pred, 0.5, json.dumps([top, 1, 2, 3, 4]), json.dumps([0.5, 0.1, 0.1, 0.1, 0.1]),
                         json.dumps([0.1] * 9)))
    store.insert("predictions", rid, rows)
    store.finish_run(rid)
    d = prediction_categories(store, rid).to_dict()
    assert d["n"] == 2 and d["overall"]["BG Fools"] == pytest.approx(0.5) and d["overall"]["Other"] == pytest.approx(0.5)
    # re-decided: tench (0) maps to fish (IN-9 class 8), so the foreground is wrong for label 0 and
    # both images become BG Irrelevant (full and fg both wrong)
    again = prediction_categories(store, rid, mapping="argmax").to_dict()
    assert again["overall"]["BG Irrelevant"] == pytest.approx(1.0)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "r.db") as s:
        yield s


def _hand_run(store):
    table = {v: [] for v in ("original", "mixed_rand", "only_bg_t")}
    for k, (y, o, m, b, _) in enumerate(HAND):
        iid = f"{CLASSES[y]}/img{k}"
        table["original"].append((iid, y, o))
        table["mixed_rand"].append((iid, y, m))
        table["only_bg_t"].append((iid, y, b))
    return _eval_run(store, table)


def test_prediction_categories_from_the_store_overall_and_per_class(store, monkeypatch):
    import bgbench.models.registry as registry

    def refuse(*a, **k):
        raise AssertionError("the categories analysis must not load a model")
    monkeypatch.setattr(registry, "create_model", refuse)
    before = set(sys.modules)
    d = prediction_categories(store, _hand_run(store)).to_dict()
    assert not any(m.startswith("timm") for m in set(sys.modules) - before)
    assert d["n"] == 7
    assert d["overall"] == pytest.approx({"BG Irrelevant": 2 / 7, "BG Required": 1 / 7, "BG+FG Required": 1 / 7,
                                          "BG Fools": 1 / 7, "Other": 2 / 7})
    assert d["per_class"]["a"] == pytest.approx({"BG Irrelevant": 1.0, "BG Required": 0, "BG+FG Required": 0,
                                                 "BG Fools": 0, "Other": 0})
    assert d["per_class"]["b"]["BG Required"] == pytest.approx(0.5)
    assert d["per_class"]["c"]["Other"] == pytest.approx(2 / 3)
    for shares in [d["overall"], *d["per_class"].values()]:
        assert sum(shares.values()) == pytest.approx(1.0)


def test_categories_cli_never_imports_timm(store, tmp_path):
    rid = _hand_run(store)
    proc = run_cli("analyze", "categories", rid, "--db", store.path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["overall"]["BG Fools"] == pytest.approx(1 / 7)
    missing = _eval_run(store, {"original": [("a/x", 0, 0)]})
    assert_one_line_error(run_cli("analyze", "categories", missing, "--db", store.path), "mixed_rand", "only_bg_t")
    assert_one_line_error(run_cli("analyze", "categories", 999, "--db", store.path), "run 999 not found")


@given(st.lists(st.tuples(*[st.integers(0, 3)] * 4), min_size=1, max_size=40))
def test_categories_partition_every_image(rows):
    y, o, m, b = (np.array(c) for c in zip(*rows))
    cats = categorize(y, o, m, b)
    assert ((cats == 0) == ((o == y) == (m == y))).all()  # BG Irrelevant exactly when full and fg agree
    assert set(cats.tolist()) <= set(range(len(CATEGORIES)))


def test_compare_by_hand(store):
    # A: right on images 0-5 of original; B: right on 0-1 only. Discordant: A only 4, B only 0.
    ids = [f"a/{i}" for i in range(6)]
    a = {"original": [(i, 0, 0) for i in ids],
         "mixed_same": [(i, 0, 0) for i in ids], "mixed_rand": [(i, 0, 0 if k < 3 else 1) for k, i in enumerate(ids)]}
    b = {"original": [(i, 0, 0 if k < 2 else 1) for k, i in enumerate(ids)],
         "mixed_same": [(i, 0, 0) for i in ids], "mixed_rand": [(i, 0, 0) for i in ids]}
    ra, rb = _eval_run(store, a), _eval_run(store, b)
    d = compare_runs(store, ra, rb).to_dict()
    o = d["variants"]["original"]
    assert (o["a_only"], o["b_only"], o["n"]) == (4, 0, 6)
    assert o["diff"] == pytest.approx(4 / 6)
    assert o["p_value"] == pytest.approx(binomtest(4, 4, 0.5).pvalue)  # exact McNemar: binomial on discordants
    assert o["p_value"] == pytest.approx(0.125)  # textbook: 2 * 0.5 ** 4
    # BG-Gap A = 1 - 3/6 = 0.5; B = 0; difference 0.5
    assert d["bg_gap_diff"]["value"] == pytest.approx(0.5)
    assert d["bg_gap_diff"]["lo"] <= 0.5 <= d["bg_gap_diff"]["hi"]


def test_compare_refuses_runs_on_different_images(store):
    ra = _eval_run(store, {"original": [("a/1", 0, 0), ("a/2", 0, 0)]})
    rb = _eval_run(store, {"original": [("a/1", 0, 0), ("a/3", 0, 0)]})
    with pytest.raises(BgbenchError, match="not on the same images"):
        compare_runs(store, ra, rb)
    assert_one_line_error(run_cli("compare", ra, rb, "--db", store.path), "not on the same images", "a/2")


def test_compare_challenge_verdicts(store):
    ids = [f"a/{i}" for i in range(5)]
    runs_ = []
    for fooled in ([0, 0, 0, 1, 1], [1, 1, 1, 1, 1]):
        rid = recording.start(store, recording.Provenance(kind="challenge", config={}))
        store.add_challenge_results(rid, [(i, 0, 0, f, 10, None, None) for i, f in zip(ids, fooled)])
        runs_.append(rid)
    d = compare_runs(store, *runs_).to_dict()["challenge"]
    assert d["acc_a"]["value"] == pytest.approx(0.6) and d["acc_b"]["value"] == 0
    assert (d["a_only"], d["b_only"]) == (3, 0)  # A survives on 3 foregrounds that fool B
    assert d["p_value"] == pytest.approx(binomtest(3, 3, 0.5).pvalue)  # = 2 * 0.5 ** 3 = 0.25


def test_compare_p_value_with_discordance_both_ways(store):
    """A right and B wrong on 7 images, B right and A wrong on 2, both right on 3: the exact
    McNemar p-value is the two-sided binomial test of 2 successes in 9 at 1/2 (0.1797)."""
    ids = [f"a/{i}" for i in range(12)]
    a_right = [1] * 7 + [0] * 2 + [1] * 3
    b_right = [0] * 7 + [1] * 2 + [1] * 3
    ra = _eval_run(store, {"original": [(i, 0, 0 if ok else 1) for i, ok in zip(ids, a_right)]})
    rb = _eval_run(store, {"original": [(i, 0, 0 if ok else 1) for i, ok in zip(ids, b_right)]})
    o = compare_runs(store, ra, rb).to_dict()["variants"]["original"]
    assert (o["a_only"], o["b_only"]) == (7, 2)
    assert o["p_value"] == pytest.approx(binomtest(2, 9, 0.5).pvalue)
    assert o["p_value"] == pytest.approx(2 * (1 + 9 + 36) / 2 ** 9)  # by hand: 2 * P(X <= 2), X ~ Bin(9, 1/2)


def test_compare_refuses_runs_on_different_data_with_the_same_ids(tmp_path):
    """Two Synthetic-9 sets drawn with seeds 1 and 2 share every image id and label, but not their
    pixels: their data fingerprints differ, and compare refuses them in one line."""
    from bgbench.variants.synth import write_dataset
    db = tmp_path / "r.db"
    ids = []
    for seed in (1, 2):
        root = tmp_path / f"s{seed}"
        write_dataset(root, per_class=1, size=32, seed=seed, split="val", progress=False)
        proc = run_cli("eval", "--model", "timm:test_resnet", "--data", root, "--variants", "original",
                       "--quiet", "--json", "--db", db)
        assert proc.returncode == 0, proc.stderr
        ids.append(json.loads(proc.stdout)["run_id"])
    with Store(db) as store:
        pa, pb = (stored_predictions(store, r)["original"] for r in ids)
        assert pa.image_ids == pb.image_ids and pa.labels.tolist() == pb.labels.tolist()
        with pytest.raises(BgbenchError, match="different data"):
            compare_runs(store, *ids)
    assert_one_line_error(run_cli("compare", *ids, "--db", db), "different data", "s1", "s2")


def test_leakage_by_hand(store):
    table = {"only_bg_b": [(f"a/{i}", i % 3, 0) for i in range(12)],  # 4 of 12 right (label 0)
             "only_bg_t": [(f"a/{i}", i % 3, i % 3) for i in range(12)],  # all right
             "no_fg": [(f"a/{i}", i % 3, i % 3 if i < 9 else 0) for i in range(12)],  # 9 + 1 of 12 right
             "original": [(f"a/{i}", i % 3, i % 3) for i in range(12)]}
    rid = _eval_run(store, table)
    d = leakage(store, rid).to_dict()
    assert d["chance"] == pytest.approx(1 / 3)
    # leakage is the paper's two background-only variants, and only those (§5)
    assert set(d["accuracy"]) == set(d["above_chance"]) == {"only_bg_b", "only_bg_t"}
    assert d["above_chance"]["only_bg_b"]["value"] == pytest.approx(0.0)
    assert d["above_chance"]["only_bg_t"]["value"] == pytest.approx(2 / 3)
    assert d["above_chance"]["only_bg_t"]["lo"] > 0  # an interval that excludes chance
    # NO-FG keeps the silhouette: reported apart, under its own name
    s = d["silhouette_signal"]
    assert s["variant"] == "no_fg" and s["name"] == "silhouette signal (no_fg)"
    assert s["accuracy"]["value"] == pytest.approx(10 / 12) and s["above_chance"]["value"] == pytest.approx(10 / 12 - 1 / 3)
    proc = run_cli("analyze", "leakage", rid, "--db", store.path)
    assert proc.returncode == 0, proc.stderr
    leak, _, shape = proc.stdout.partition("silhouette signal (no_fg)")
    assert "only_bg_t" in leak and "no_fg" not in leak and "+50.0%" in shape  # 10/12 - 1/3 = 50 points
    doc = json.loads(run_cli("analyze", "leakage", rid, "--db", store.path, "--json").stdout)
    assert "no_fg" not in doc["above_chance"] and doc["silhouette_signal"]["above_chance"]["value"] == pytest.approx(0.5)


def test_leakage_needs_a_background_only_variant(store):
    rid = _eval_run(store, {"no_fg": [("a/1", 0, 0)], "original": [("a/1", 0, 0)]})
    with pytest.raises(BgbenchError, match="only_bg_b or only_bg_t"):
        leakage(store, rid)
    assert_one_line_error(run_cli("analyze", "leakage", rid, "--db", store.path), "only_bg_b or only_bg_t")


def test_rfs_edge_cases_and_sign():
    assert rfs(0.0, 0.0) == 0 and rfs(1.0, 1.0) == 0
    assert rfs(0.2, 0.8) == pytest.approx(0.6 / (2 * 0.5))  # fg noise hurts more: positive
    assert rfs(0.8, 0.2) == pytest.approx(-0.6)
    assert rfs(0.0, 0.5) == pytest.approx(0.5 / (2 * 0.25))  # a = 0.25 -> RFS 1 (extreme)
    assert rfs(0.9, 1.0) == pytest.approx(0.1 / (2 * 0.05))


@given(st.floats(0, 1), st.floats(0, 1))
def test_rfs_is_bounded_and_antisymmetric(f, b):
    assert -1 - 1e-9 <= rfs(f, b) <= 1 + 1e-9
    assert rfs(f, b) == pytest.approx(-rfs(b, f))


def test_quantile_bins_by_hand():
    shares = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    correct = np.array([1, 1, 1, 0, 0, 0], bool)
    edges = quantile_bins(shares, 2)
    assert edges.tolist() == pytest.approx([0.1, 0.35, 0.6])
    rows = binned_accuracy(shares, correct, edges)
    assert [(r["n"], r["acc"]) for r in rows] == [(3, 1.0), (3, 0.0)]
    assert rows[0]["acc_hi"] == 1.0 and rows[1]["acc_lo"] == 0.0


def _jpeg(img, quality=75):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def test_box_recovery_from_only_bg_b_on_generated_data(synth_root):
    from bgbench.data.images import decode_image
    truth = read_boxes(synth_root, "val")
    ious, ious_jpeg = [], []
    for iid, box in truth.items():
        img = decode_image(synth_root / "only_bg_b" / "val" / f"{iid}.png")
        ious.append(B.box_iou(B.recover_box(img), box))
        ious_jpeg.append(B.box_iou(B.recover_box(_jpeg(img)) or (0, 0, 1, 1), box))
    print(f"box recovery IoU: PNG mean {np.mean(ious):.3f} min {np.min(ious):.3f}; "
          f"JPEG q75 mean {np.mean(ious_jpeg):.3f} min {np.min(ious_jpeg):.3f}")
    assert np.min(ious) == 1.0  # lossless: exact
    assert np.mean(ious_jpeg) > 0.95


def test_boxsize_uses_recovered_boxes_without_records(synth_copy, store):
    (synth_copy / "manifest.csv").unlink()
    from bgbench.data.layout import discover
    layout = discover(synth_copy, variants=["original"])
    boxes, sizes, source = B.dataset_boxes(layout)
    assert source.startswith("recovered") and len(boxes) == len(layout.items("original"))
    ids = [it.image_id for it in layout.items("original")]
    rid = _eval_run(store, {"only_bg_t": [(i, 0, 0 if k % 2 else 1) for k, i in enumerate(ids)]},
                    data_root=str(synth_copy))
    proc = run_cli("analyze", "boxsize", rid, "--db", store.path, "--bins", 3, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    curve = doc["curves"]["only_bg_t"]
    assert doc["box_source"].startswith("recovered") and sum(r["n"] for r in curve) == len(ids)
    assert sum(r["acc"] * r["n"] for r in curve) == pytest.approx(sum(1 for k in range(len(ids)) if k % 2))


def test_1000_class_runs_store_raw_outputs_and_redecide_without_inference(tmp_path):
    """The stored top-5 and superclass sums re-decide a run exactly as live inference would."""
    import torch
    from PIL import Image

    from bgbench.probing.tables import stored_predictions
    from bgbench.classes import IN9_FOLDERS, map_logits
    from bgbench.data.layout import Item
    from bgbench.evaluation.predict import predict_items
    from bgbench.models.spec import IMAGENET1K, BgModel, ModelSpec

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 1000))
    with torch.no_grad():
        net[1].weight.mul_(40)  # peaked outputs, so argmax and superclass disagree on some images
    model = BgModel(net, ModelSpec(name="lin", arch="hand", num_classes=1000, label_space=IMAGENET1K)).eval()
    items = []
    rng = np.random.default_rng(0)
    for k in range(12):
        path = tmp_path / f"{k}.png"
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(path)
        items.append(Item(f"{IN9_FOLDERS[k % 9]}/{k}", k % 9, path))
    live = {m: predict_items(model, items, mapping=m, progress=False) for m in ("argmax", "superclass")}
    assert live["argmax"].top5_classes.shape == (12, 5) and live["argmax"].superclass_probs.shape == (12, 9)
    with Store(tmp_path / "r.db") as store:
        rid = recording.start(store, recording.Provenance(kind="eval", config={"classes": list(IN9_FOLDERS)}))
        store.insert("predictions", rid, live["argmax"].rows("original"))
        for m in ("argmax", "superclass"):
            again = stored_predictions(store, rid, mapping=m)["original"]
            order = np.argsort(live[m].image_ids)
            assert again.image_ids == [live[m].image_ids[i] for i in order], m
            assert again.preds.tolist() == live[m].preds[order].tolist(), m
            assert again.conf == pytest.approx(live[m].conf[order], abs=1e-5)
        x = torch.stack([torch.from_numpy(np.asarray(Image.open(it.path))).permute(2, 0, 1).float() / 255
                         for it in items])
        assert map_logits(model(x), "superclass")[0].tolist() == live["superclass"].preds.tolist()


def test_bg_blurred_is_computed_on_the_fly_when_its_folder_is_absent(synth_copy, tmp_path):
    """With no bg_blurred/ folder (and no recorded boxes, as in the public release), eval renders it
    from original + fg_mask + the box recovered from only_bg_b, identical to the registered function."""
    from bgbench.variants.blurred import blurred_renderer
    from bgbench.data.images import decode_image, load_mask
    from bgbench.data.layout import discover
    from bgbench.variants.functions import bg_blurred
    truth = read_boxes(synth_copy, "val")
    (synth_copy / "manifest.csv").unlink()
    layout = discover(synth_copy, variants=["original"])
    item = layout.items("original")[5]
    want = bg_blurred(decode_image(item.path), load_mask(layout.mask_path(item.image_id)), truth[item.image_id])
    assert np.array_equal(blurred_renderer(layout)(item), want)
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_copy, "--variants", "bg_blurred",
                   "--quiet", "--json", "--db", tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["accuracy"]["bg_blurred"]["n"] == 36
    assert "computed on the fly" in proc.stderr


def test_boxsize_bad_bins_is_one_line(store):
    rid = _eval_run(store, {"only_bg_t": [("a/x", 0, 0)]})
    assert_one_line_error(run_cli("analyze", "boxsize", rid, "--bins", 0, "--db", store.path), "--bins", "at least 1")
