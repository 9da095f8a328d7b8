"""Accuracy by box size (paper Fig. 14): quantile bins by hand, boxes recovered from ONLY-BG-B, BG-Blurred on the fly, and 1000-class runs re-decided without inference."""
import io
import json
import numpy as np
import pytest
from bgbench import recording
from bgbench.data import boxes as B
from bgbench.measures.boxsize.summary import binned_accuracy, quantile_bins
from bgbench.data.manifest import read_boxes
from bgbench.store import Store
from helpers.run_tables import eval_run, store  # noqa: F401 (fixture)
from conftest import assert_one_line_error, run_cli


def test_quantile_bins_by_hand():
    shares = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    correct = np.array([1, 1, 1, 0, 0, 0], bool)
    edges = quantile_bins(shares, 2)
    assert edges.tolist() == pytest.approx([0.1, 0.35, 0.6])
    rows = binned_accuracy(shares, correct, edges)
    assert [(r["n"], r["acc"]) for r in rows] == [(3, 1.0), (3, 0.0)]
    assert rows[0]["acc_hi"] == 1.0 and rows[1]["acc_lo"] == 0.0


def _iou(a, b) -> float:
    """Intersection over union of two (x0, y0, x1, y1) boxes."""
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


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
        ious.append(_iou(B.recover_box(img), box))
        ious_jpeg.append(_iou(B.recover_box(_jpeg(img)) or (0, 0, 1, 1), box))
    print(f"box recovery IoU: PNG mean {np.mean(ious):.3f} min {np.min(ious):.3f}; "
          f"JPEG q75 mean {np.mean(ious_jpeg):.3f} min {np.min(ious_jpeg):.3f}")
    assert np.min(ious) == 1.0  # lossless: exact
    assert np.mean(ious_jpeg) > 0.95


def test_boxsize_uses_recovered_boxes_without_records(synth_copy, store):
    (synth_copy / "manifest.csv").unlink()
    from bgbench.data.in9 import discover
    layout = discover(synth_copy, variants=["original"])
    boxes, sizes, source = B.dataset_boxes(layout)
    assert source.startswith("recovered") and len(boxes) == len(layout.items("original"))
    ids = [it.image_id for it in layout.items("original")]
    rid = eval_run(store, {"only_bg_t": [(i, 0, 0 if k % 2 else 1) for k, i in enumerate(ids)]},
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
    from bgbench.data.images import decode_image, read_mask
    from bgbench.data.in9 import discover
    from bgbench.variants.functions import bg_blurred
    truth = read_boxes(synth_copy, "val")
    (synth_copy / "manifest.csv").unlink()
    layout = discover(synth_copy, variants=["original"])
    item = layout.items("original")[5]
    want = bg_blurred(decode_image(item.path), read_mask(layout.mask_path(item.image_id)), truth[item.image_id])
    assert np.array_equal(blurred_renderer(layout)(item), want)
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_copy, "--variants", "bg_blurred",
                   "--quiet", "--json", "--db", tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["accuracy"]["bg_blurred"]["n"] == 36
    assert "computed on the fly" in proc.stderr


def test_boxsize_bad_bins_is_one_line(store):
    rid = eval_run(store, {"only_bg_t": [("a/x", 0, 0)]})
    assert_one_line_error(run_cli("analyze", "boxsize", rid, "--bins", 0, "--db", store.path), "--bins", "at least 1")
