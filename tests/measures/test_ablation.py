"""Attribute ablation (RIVAL10): gray copies and their drops, by hand and by a reimplementation, and the probe's rows against the model run here."""
from pathlib import Path
import numpy as np
import pytest
import torch
from PIL import Image
import bgbench
from bgbench.measures.ablate.engine import ablation_outcomes
from bgbench.measures.ablate.summary import AblateRow, summarize_ablation
from bgbench.measures.common.regions import Region


def _attr_files(root: Path, split: str = "val"):
    """(class index, image, object mask, {part: mask}) of every original, read with numpy and PIL."""
    classes = sorted(p.name for p in (root / "original" / split).iterdir())
    for label, cls in enumerate(classes):
        for img in sorted((root / "original" / split / cls).iterdir()):
            obj = np.load(root / "fg_mask" / split / cls / f"{img.stem}.npy") != 0
            npz = root / "attr_mask" / split / cls / f"{img.stem}.npz"
            with np.load(npz, allow_pickle=False) as z:
                parts = {k: z[k] != 0 for k in z.files}
            yield label, np.asarray(Image.open(img).convert("RGB")), obj, parts


def test_ablation_grays_exactly_the_region_and_scores_each_copy():
    x = torch.rand(3, 3, 6, 6)
    where = torch.zeros(2, 1, 6, 6)
    where[0, :, :3] = 1
    where[1, :, :, 4:] = 1
    seen = []

    def score(batch):  # prediction: the class index 0; probabilities: two classes from the mean
        seen.append(batch.clone())
        p1 = batch.mean(dim=(1, 2, 3))
        return torch.zeros(len(batch), dtype=torch.long), torch.stack([1 - p1, p1], dim=1)
    out = ablation_outcomes(score, x, [Region("attr:a", torch.tensor([0, 2]), where)], torch.tensor([1, 0, 1]),
                            chunk=2)
    sent = torch.cat(seen)
    assert torch.equal(sent[:3], x)
    for j, k in enumerate((0, 2)):
        want = x[k].clone()
        want[:, where[j, 0] > 0] = 0.5  # gray written in by hand
        assert torch.allclose(sent[3 + j], want)
    clean_p, ablated_p = out["none"][1], out["attr:a"][1]
    assert torch.allclose(clean_p, torch.stack([x[0].mean(), 1 - x[1].mean(), x[2].mean()]))
    assert torch.allclose(ablated_p, torch.stack([sent[3].mean(), sent[4].mean()]))


def test_ablation_drops_against_a_table_worked_by_hand():
    # image, label, region, pred, correct, p(true)
    rows = [("a", 0, "none", 0, 1, 0.9), ("a", 0, "fg", 1, 0, 0.2), ("a", 0, "attr:x", 0, 1, 0.8),
            ("b", 0, "none", 0, 1, 0.7), ("b", 0, "fg", 0, 1, 0.6),
            ("c", 1, "none", 1, 1, 0.6), ("c", 1, "fg", 0, 0, 0.1), ("c", 1, "attr:x", 0, 0, 0.3),
            ("d", 1, "none", 0, 0, 0.4), ("d", 1, "fg", 0, 0, 0.4)]
    s = summarize_ablation([AblateRow(*r) for r in rows], lambda i: "AB"[i], seed=0, replicates=200)
    fg, x = s.regions["fg"], s.regions["attr:x"]
    assert fg["n"] == 4 and x["n"] == 2  # an attribute only on the images that have it
    assert fg["clean_acc"] == pytest.approx(3 / 4) and fg["ablated_acc"] == pytest.approx(1 / 4)
    assert fg["acc_drop"]["value"] == pytest.approx(2 / 4)
    assert fg["prob_drop"]["value"] == pytest.approx((0.7 + 0.1 + 0.5 + 0.0) / 4)
    assert x["acc_drop"]["value"] == pytest.approx((0 + 1) / 2)
    assert x["prob_drop"]["value"] == pytest.approx((0.1 + 0.3) / 2)
    assert s.per_class["fg"]["A"]["acc_drop"]["value"] == pytest.approx(1 / 2)
    assert s.per_class["fg"]["B"]["prob_drop"]["value"] == pytest.approx(0.25)
    assert s.per_class["attr:x"]["B"]["n"] == 1
    # within class B of attr:x a single image: every resample is that image, the interval a point
    b = s.per_class["attr:x"]["B"]["prob_drop"]
    assert b["lo"] == pytest.approx(0.3) and b["hi"] == pytest.approx(0.3)
    assert fg["acc_drop"]["lo"] <= 0.5 <= fg["acc_drop"]["hi"] and fg["acc_drop"]["lo"] < fg["acc_drop"]["hi"]


def test_probe_ablate_rows_match_the_model_run_here_on_gray_images(synth_root):
    """Every stored row against the model applied in this test to the image with the region
    grayed by hand; the regions from the mask files themselves."""
    model = bgbench.load_model("timm:test_resnet")
    result = bgbench.probe("ablate", model, synth_root, progress=False, batch_size=5)
    by_image = {}
    for image_id, label, region, pred, correct, prob in result.rows:
        by_image.setdefault(image_id, {})[region] = (label, pred, correct, prob)
    files = list(_attr_files(synth_root))
    classes = sorted(p.name for p in (synth_root / "original" / "val").iterdir())
    stems = [sorted(p.stem for p in (synth_root / "original" / "val" / c).iterdir()) for c in classes]
    ids = [f"{classes[label]}/{stem}" for label in range(9) for stem in stems[label]]
    assert sorted(by_image) == sorted(ids)
    net = model.eval()
    for image_id, (label, image, obj, parts) in zip(ids, files):
        regions = {"none": np.zeros_like(obj), "fg": obj, "bg": ~obj, **{f"attr:{k}": m for k, m in parts.items()}}
        assert set(by_image[image_id]) == set(regions)
        x = torch.from_numpy(image).permute(2, 0, 1).float() / 255
        for region, m in regions.items():
            gray = x.clone()
            gray[:, torch.from_numpy(m)] = 0.5
            with torch.no_grad():
                probs = net(gray[None]).softmax(dim=1)[0]
            got_label, pred, correct, prob = by_image[image_id][region]
            assert got_label == label and pred == int(probs.argmax()) and correct == int(pred == label)
            assert prob == pytest.approx(float(probs[label]), abs=1e-5)
    assert result.summary().regions["fg"]["n"] == 36
