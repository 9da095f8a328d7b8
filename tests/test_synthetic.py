"""Synthetic-9: layout, exact masks, label = foreground class, the donor manifest, SYNTHETIC9.json,
worker independence and the overwrite check."""
import csv
import json

import numpy as np
from PIL import Image

from bgbench.data.images import read_mask
from bgbench.data.in9 import discover
from bgbench.data.synthetic import SYNTH_CLASSES, TEXTURES, generate
from bgbench.variants import IN9_VARIANTS
from bgbench.variants import functions as F
from conftest import run_cli
from test_data_errors import assert_one_line_error


def _rows(root, split="val"):
    with open(root / "manifest.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["split"] == split]


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_layout_has_all_variants_masks_and_manifest(synth_root):
    layout = discover(synth_root)
    assert set(IN9_VARIANTS) <= set(layout.variants)
    assert layout.classes == SYNTH_CLASSES
    assert len(layout.foregrounds()) == 9 * 4
    rows = _rows(synth_root)
    assert sorted((r["folder"], r["image"]) for r in rows) == sorted(
        (v, it.image_id) for v in IN9_VARIANTS for it in layout.items("original"))  # one row per written image
    mixed = [r for r in rows if r["bg_image"]]
    assert {r["folder"] for r in mixed} == {"mixed_same", "mixed_rand", "mixed_next"}
    for r in mixed:
        label, bg_class = int(r["label"]), SYNTH_CLASSES.index(r["bg_class"])
        assert r["bg_image"].startswith(r["bg_class"] + "/") and r["bg_image"] != r["image"]
        if r["folder"] == "mixed_next":
            assert bg_class == (label + 1) % 9
        if r["folder"] == "mixed_same":
            assert bg_class == label
        assert json.loads(r["params"])["texture"] in TEXTURES


def test_label_is_the_foreground_class_and_mixed_keeps_foreground(synth_root):
    layout = discover(synth_root)
    rows = {(r["folder"], r["image"]): r for r in _rows(synth_root)}
    for item, mask_path in layout.foregrounds():
        mask = read_mask(mask_path)
        orig = np.asarray(Image.open(item.path))
        assert item.image_id.split("/")[0] == SYNTH_CLASSES[item.label]
        for v in ("mixed_same", "mixed_rand", "mixed_next", "only_fg"):
            other = np.asarray(Image.open(synth_root / v / "val" / f"{item.image_id}.png"))
            assert (other[mask] == orig[mask]).all()
        row = rows[("original", item.image_id)]
        ys, xs = np.nonzero(mask)
        assert row["box"] == f"{xs.min()} {ys.min()} {xs.max() + 1} {ys.max() + 1}"
        assert float(row["fg_fraction"]) == round(mask.mean(), 5) and row["mask_source"] == "exact"


def test_mixed_images_are_the_recorded_donors_background(synth_root):
    rows = _rows(synth_root)
    boxes = {r["image"]: tuple(int(v) for v in r["box"].split()) for r in rows if r["folder"] == "original"}

    def load(v, iid):
        return np.asarray(Image.open(synth_root / v / "val" / f"{iid}.png").convert("RGB"))

    for r in rows:
        if r["bg_image"]:
            d = r["bg_image"]
            mask = np.load(synth_root / "fg_mask" / "val" / f"{r['image']}.npy").astype(bool)
            dmask = np.load(synth_root / "fg_mask" / "val" / f"{d}.npy").astype(bool)
            want = F.composite(load("original", r["image"]), mask, F.only_bg_t(load("original", d), dmask, boxes[d]))
            assert np.array_equal(load(r["folder"], r["image"]), want), (r["folder"], r["image"])


def test_synthetic9_json_describes_each_split(synth_root):
    info = json.loads((synth_root / "SYNTHETIC9.json").read_text())
    assert info["classes"] == list(SYNTH_CLASSES) and info["textures"] == list(TEXTURES)
    assert info["splits"]["val"] == {"per_class": 4, "size": 32, "seed": 0, "bg_correlation": 0.95, "images": 36}
    assert info["splits"]["train"]["per_class"] == 6 and info["splits"]["train"]["images"] == 54


def test_generation_is_deterministic_and_splits_differ():
    a = generate(2, size=32, seed=3, split="val")
    b = generate(2, size=32, seed=3, split="val")
    c = generate(2, size=32, seed=3, split="train")
    assert all((x.image == y.image).all() for x, y in zip(a, b))
    assert any((x.image != y.image).any() for x, y in zip(a, c))


def test_one_and_two_workers_write_identical_bytes_and_a_second_run_needs_overwrite(tmp_path):
    args = ["--per-class", 3, "--size", 24, "--seed", 5, "--quiet"]
    for w in (1, 2):
        assert run_cli("synth", "--out", tmp_path / f"w{w}", "--workers", w, *args).returncode == 0
    one, two = _files(tmp_path / "w1"), _files(tmp_path / "w2")
    assert len(one) == 27 * 10 + 4 and one == two  # 8 variants, mask, attribute masks per image; 3 tables and
    # FILES_val.txt, the list of what bgbench wrote
    assert_one_line_error(run_cli("synth", "--out", tmp_path / "w1", *args), "--overwrite")
    assert run_cli("synth", "--out", tmp_path / "w1", "--overwrite", *args).returncode == 0
    assert _files(tmp_path / "w1") == two


def test_background_correlation_is_configurable():
    strong = generate(30, size=32, seed=0, bg_correlation=1.0)
    none = generate(30, size=32, seed=0, bg_correlation=0.0)
    assert all(s.texture == s.label for s in strong)
    assert np.mean([s.texture == s.label for s in none]) < 0.4


def test_synth_records_its_run_as_build_and_edit_do(tmp_path):
    """The command records the generation (its config and data fingerprint), a shard only once merged."""
    import sqlite3
    db = tmp_path / "r.db"
    proc = run_cli("synth", "--out", tmp_path / "s9", "--size", 16, "--per-class", 1, "--split", "val", "--db", db,
                   "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    with sqlite3.connect(db) as conn:
        kind, status, root = conn.execute("SELECT kind, status, data_root FROM runs WHERE id = ?", (run_id,)).fetchone()
    assert (kind, status, root) == ("synth", "done", str(tmp_path / "s9"))
    shard = run_cli("synth", "--out", tmp_path / "part", "--size", 16, "--per-class", 1, "--split", "val",
                    "--shard", "0/2", "--db", db, "--json", "--quiet")
    assert shard.returncode == 0 and "run_id" not in json.loads(shard.stdout)
