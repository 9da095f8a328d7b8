"""Synthetic-9: layout, exact masks, label = foreground class, and the donor manifest."""
import csv
import json

import numpy as np
from PIL import Image

from bgbench.data import discover, load_mask
from bgbench.data.synthetic import SYNTH_CLASSES, generate, render_variants
from bgbench.variants import IN9_VARIANTS


def test_layout_has_all_variants_masks_and_manifest(synth_root):
    layout = discover(synth_root)
    assert set(IN9_VARIANTS) <= set(layout.variants)
    assert layout.classes == SYNTH_CLASSES
    assert len(layout.foregrounds()) == 9 * 4
    rows = list(csv.DictReader(open(synth_root / "manifest_val.csv")))
    assert {r["variant"] for r in rows} == {"mixed_same", "mixed_rand", "mixed_next"}
    for r in rows:
        label, bg_class = int(r["label"]), int(r["bg_class"])
        assert r["bg_image"].startswith(SYNTH_CLASSES[bg_class] + "/")
        if r["variant"] == "mixed_next":
            assert bg_class == (label + 1) % 9
        if r["variant"] == "mixed_same":
            assert bg_class == label


def test_label_is_the_foreground_class_and_mixed_keeps_foreground(synth_root):
    layout = discover(synth_root)
    boxes = json.load(open(synth_root / "boxes_val.json"))
    for item, mask_path in layout.foregrounds():
        mask = load_mask(mask_path)
        orig = np.asarray(Image.open(item.path))
        assert item.image_id.split("/")[0] == SYNTH_CLASSES[item.label]
        for v in ("mixed_same", "mixed_rand", "mixed_next", "only_fg"):
            other = np.asarray(Image.open(synth_root / v / "val" / f"{item.image_id}.png"))
            assert (other[mask] == orig[mask]).all()
        x0, y0, x1, y1 = boxes[item.image_id]
        ys, xs = np.nonzero(mask)
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (x0, y0, x1, y1)


def test_generation_is_deterministic_and_splits_differ():
    a = generate(2, size=32, seed=3, split="val")
    b = generate(2, size=32, seed=3, split="val")
    c = generate(2, size=32, seed=3, split="train")
    assert all((x.image == y.image).all() for x, y in zip(a, b))
    assert any((x.image != y.image).any() for x, y in zip(a, c))
    ia, ma = render_variants(a, seed=1)
    ib, mb = render_variants(b, seed=1)
    assert ma == mb and all((x == y).all() for x, y in zip(ia["mixed_rand"], ib["mixed_rand"]))


def test_background_correlation_is_configurable():
    strong = generate(30, size=32, seed=0, bg_correlation=1.0)
    none = generate(30, size=32, seed=0, bg_correlation=0.0)
    assert all(s.texture == s.label for s in strong)
    assert np.mean([s.texture == s.label for s in none]) < 0.4
