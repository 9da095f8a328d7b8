"""`bgbench build`: GrabCut quality on Synthetic-9, agreement with ground-truth variants, worker
independence, real photographs, every reject reason, COCO polygons, and the eval round trip."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from bgbench.data.synthetic import SYNTH_CLASSES, Sample, generate
from bgbench.variants import functions as F
from bgbench.variants.annotations import load_annotations, rasterize_polygons
from bgbench.variants.build import BuildConfig, build
from bgbench.variants.donors import Candidate, assign_donors
from bgbench.variants.prepare import MAX_BOX_COVER
from bgbench.variants.preprocess import Preprocess
from conftest import assert_one_line_error, run_cli

NO_RESIZE = Preprocess(resize=None, crop=None)


def voc_xml(*boxes: Tuple[int, int, int, int]) -> str:
    objs = "".join(f"<object><name>x</name><bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax>"
                   f"<ymax>{b[3]}</ymax></bndbox></object>" for b in boxes)
    return f"<annotation><size><width>0</width></size>{objs}</annotation>"


def write_sample(images: Path, boxes: Path, cls: str, stem: str, image: np.ndarray, *bxs) -> None:
    (images / cls).mkdir(parents=True, exist_ok=True)
    (boxes / cls).mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(images / cls / f"{stem}.png")
    (boxes / cls / f"{stem}.xml").write_text(voc_xml(*bxs))


def write_synth(root: Path, samples: Sequence[Sample]) -> List[str]:
    ids = []
    for i, s in enumerate(samples):
        cls = SYNTH_CLASSES[s.label]
        write_sample(root / "images", root / "boxes", cls, f"s{i:03d}", s.image, s.box)
        ids.append(f"{cls}/s{i:03d}")
    return ids


def read_csv(path: Path) -> List[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def manifest(path: Path, folder: str = "original") -> Dict[str, dict]:
    """image id -> its manifest row in `folder` (one row per written image and folder)."""
    return {r["image"]: r for r in read_csv(path / "manifest.csv") if r["folder"] == folder}


def png(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture(scope="module")
def synth_build(tmp_path_factory):
    """Synthetic-9 (96 px, 3 per class) built with 1 and with 2 workers."""
    root = tmp_path_factory.mktemp("build")
    samples = generate(3, size=96, seed=0)
    ids = write_synth(root, samples)
    outs = {}
    for workers in (1, 2):
        cfg = BuildConfig(images=root / "images", boxes=root / "boxes", out=root / f"out{workers}",
                          preprocess=NO_RESIZE, seed=3, workers=workers)
        outs[workers] = build(cfg, progress=False)
    return root, samples, ids, outs


def test_grabcut_masks_match_ground_truth(synth_build):
    root, samples, ids, outs = synth_build
    assert len(outs[1].built) == len(samples) and not outs[1].rejects
    ious = []
    for image_id, s in zip(ids, samples):
        m = np.load(root / "out1" / "fg_mask" / "val" / f"{image_id}.npy")
        assert m.dtype == np.uint8 and set(np.unique(m)) <= {0, 1}
        m = m.astype(bool)
        ious.append((m & s.mask).sum() / (m | s.mask).sum())
    assert np.median(ious) >= 0.8, ious


def test_variants_equal_ground_truth_where_masks_agree(synth_build):
    root, samples, ids, outs = synth_build
    out = root / "out1"
    rows = manifest(out, "mixed_rand")
    index = {image_id: i for i, image_id in enumerate(ids)}
    for image_id, s in zip(ids, samples):
        m = np.load(out / "fg_mask" / "val" / f"{image_id}.npy").astype(bool)
        agree = m == s.mask
        got = {v: png(out / v / "val" / f"{image_id}.png") for v in ("original", "only_bg_b", "only_bg_t",
                                                                      "no_fg", "only_fg", "mixed_rand")}
        assert np.array_equal(got["original"], s.image)
        assert np.array_equal(got["only_bg_b"], F.only_bg_b(s.image, s.mask, s.box))
        assert np.array_equal(got["only_bg_t"], F.only_bg_t(s.image, s.mask, s.box))
        for v in ("no_fg", "only_fg"):
            truth = getattr(F, v)(s.image, s.mask, s.box)
            assert np.array_equal(got[v][agree], truth[agree])
        donor = samples[index[rows[image_id]["bg_image"]]]
        expected = F.composite(s.image, m, F.only_bg_t(donor.image, donor.mask, donor.box))
        assert np.array_equal(got["mixed_rand"], expected)
        assert rows[image_id]["mask_source"] == "grabcut"


def test_output_is_byte_identical_with_1_and_2_workers(synth_build):
    root = synth_build[0]
    files1 = sorted(p.relative_to(root / "out1") for p in (root / "out1").rglob("*") if p.is_file())
    files2 = sorted(p.relative_to(root / "out2") for p in (root / "out2").rglob("*") if p.is_file())
    assert files1 == files2 and len(files1) == 27 * 10 + 3  # the tables and FILES_val.txt, bgbench's list
    for rel in files1:
        assert (root / "out1" / rel).read_bytes() == (root / "out2" / rel).read_bytes(), rel


def test_donors_are_deterministic_and_follow_the_rule(synth_build):
    built = [Candidate(p.index, p.label, p.size) for p in synth_build[3][1].built]
    a, b = assign_donors(built, 9, seed=5), assign_donors(built, 9, seed=5)
    assert a == b
    label = {p.index: p.label for p in built}
    for i, d in a.items():
        assert label[d["mixed_same"].index] == label[i] and d["mixed_same"].index != i
        assert label[d["mixed_next"].index] == (label[i] + 1) % 9
        assert not any(donor.fallback for donor in d.values())


def test_balance_drops_to_the_smallest_class():
    from bgbench.variants.build import _balance
    from bgbench.variants.prepare import Prepared
    built = [Prepared(i, f"c{lab}/{i}", lab, f"c{lab}/{i}.png", (0, 0, 1, 1), (0, 0, 1, 1), 1.0, "grabcut", 0.1,
                      (8, 8)) for i, lab in enumerate([0] * 5 + [1] * 2 + [2] * 3)]
    kept, dropped = _balance(built, seed=0)
    assert [sum(p.label == c for p in kept) for c in range(3)] == [2, 2, 2] and len(dropped) == 4
    assert kept == _balance(built, seed=0)[0]


MIXED = ("mixed_same", "mixed_rand", "mixed_next")


def write_sized_inputs(root: Path, layout: Dict[str, List[Sample]]) -> List[str]:
    """Samples (of any sizes) under root/images, root/boxes and their exact masks under root/masks."""
    ids = []
    for cls, samples in layout.items():
        for i, s in enumerate(samples):
            stem = f"{s.image.shape[0]}px{i}"
            write_sample(root / "images", root / "boxes", cls, stem, s.image, s.box)
            (root / "masks" / cls).mkdir(parents=True, exist_ok=True)
            np.save(root / "masks" / cls / f"{stem}.npy", s.mask)
            ids.append(f"{cls}/{stem}")
    return ids


def test_no_resize_with_two_image_sizes_pairs_every_image_with_a_donor_of_its_size(tmp_path):
    big, small, odd = generate(1, size=64, seed=4), generate(1, size=48, seed=5), generate(1, size=40, seed=6)
    layout = {"a": [big[0], big[1], small[0], small[1]], "b": [big[2], big[3], small[2]], "c": [big[4], odd[0]]}
    ids = write_sized_inputs(tmp_path, layout)
    classes = sorted(layout)
    results = {}
    for workers in (1, 2):
        cfg = BuildConfig(images=tmp_path / "images", boxes=tmp_path / "boxes", masks=tmp_path / "masks",
                          out=tmp_path / f"out{workers}", preprocess=NO_RESIZE, balance=False, workers=workers)
        results[workers] = build(cfg, progress=False)
    out = tmp_path / "out1"
    # the only image of its size cannot get another image's background: rejected, not fatal
    assert {r["source"]: r["reason"] for r in read_csv(out / "rejects.csv")} == {"c/40px1.png": "no_donor_of_same_size"}
    rows = manifest(out)
    mixed = {v: manifest(out, v) for v in MIXED}
    assert sorted(rows) == sorted(i for i in ids if i != "c/40px1")
    original = {i: png(out / "original" / "val" / f"{i}.png") for i in rows}
    masks = {i: np.load(out / "fg_mask" / "val" / f"{i}.npy").astype(bool) for i in rows}

    def same_size(image_id: str, cls: str) -> List[str]:
        return [j for j in rows if j.startswith(cls + "/") and original[j].shape == original[image_id].shape]

    fallbacks = 0
    for image_id in rows:
        cls = image_id.split("/")[0]
        for v in MIXED:
            donor = mixed[v][image_id]["bg_image"]
            assert original[donor].shape == original[image_id].shape, (image_id, v, donor)
            background = F.only_bg_t(original[donor], masks[donor], tuple(map(int, rows[donor]["box"].split())))
            expected = F.composite(original[image_id], masks[image_id], background)
            assert np.array_equal(png(out / v / "val" / f"{image_id}.png"), expected), (image_id, v)
        for v, wanted in (("mixed_same", cls), ("mixed_next", classes[(classes.index(cls) + 1) % len(classes)])):
            got = mixed[v][image_id]
            if same_size(image_id, wanted):  # the rule holds wherever an image of that class and size exists
                assert got["bg_class"] == wanted and got["bg_fallback"] == "", (image_id, v)
            else:  # another image of the same size, and the manifest says why
                assert got["bg_fallback"] and got["bg_image"] != image_id, (image_id, v)
                fallbacks += 1
    assert fallbacks  # b's 48 px image: no 48 px image in c
    files1 = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files1 == sorted(p.relative_to(tmp_path / "out2") for p in (tmp_path / "out2").rglob("*") if p.is_file())
    for rel in files1:
        assert (out / rel).read_bytes() == (tmp_path / "out2" / rel).read_bytes(), rel


def test_classes_are_balanced_by_default(tmp_path):
    samples = generate(1, size=48, seed=7)
    layout = {"a": samples[0:3], "b": samples[3:4], "c": samples[4:6], "d": []}  # d: an empty class
    ids = write_sized_inputs(tmp_path, layout)
    (tmp_path / "images" / "d").mkdir()
    smallest = min(len(v) for v in layout.values() if v)
    args = dict(images=tmp_path / "images", boxes=tmp_path / "boxes", masks=tmp_path / "masks", preprocess=NO_RESIZE)
    res = build(BuildConfig(out=tmp_path / "default", **args), progress=False)
    counts = {cls: sum(p.image_id.startswith(cls + "/") for p in res.built) for cls in layout}
    assert counts == {cls: smallest if v else 0 for cls, v in layout.items()}
    rejects = read_csv(tmp_path / "default" / "rejects.csv")
    assert {r["reason"] for r in rejects} == {"balanced_out"} and len(rejects) == len(ids) - len(res.built)
    res = build(BuildConfig(out=tmp_path / "unbalanced", balance=False, **args), progress=False)
    assert sorted(p.image_id for p in res.built) == sorted(ids) and not res.rejects


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.data())
def test_every_box_the_cover_filter_keeps_leaves_a_background_strip(h, w, data):
    """Why build needs no 'no background' reject: the 90% rule already removes the only such box."""
    x0 = data.draw(st.integers(0, w - 1))
    y0 = data.draw(st.integers(0, h - 1))
    x1 = data.draw(st.integers(x0 + 1, w))
    y1 = data.draw(st.integers(y0 + 1, h))
    if (x1 - x0) * (y1 - y0) <= MAX_BOX_COVER * h * w:
        assert F.background_strip(np.zeros((h, w, 3), np.uint8), (x0, y0, x1, y1)).size > 0


def _synth_with_masks(tmp_path):
    """Four Synthetic-9 images with their boxes and their true masks as PNG files: a build input
    that skips GrabCut."""
    samples = generate(1, size=64, seed=1)[:4]
    ids = write_synth(tmp_path, samples)
    for image_id, s in zip(ids, samples):
        p = tmp_path / "masks" / f"{image_id}.png"
        p.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(s.mask.astype(np.uint8) * 255).save(p)
    return samples, ids


def test_provided_masks_skip_grabcut(tmp_path):
    samples, ids = _synth_with_masks(tmp_path)
    res = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--masks",
                  tmp_path / "masks", "--out", tmp_path / "out", "--no-resize", "--quiet")
    assert res.returncode == 0, res.stderr
    assert {r["mask_source"] for r in read_csv(tmp_path / "out" / "manifest.csv")} == {"provided"}
    for image_id, s in zip(ids, samples):
        assert np.array_equal(np.load(tmp_path / "out" / "fg_mask" / "val" / f"{image_id}.npy"), s.mask)


PHOTOS = {  # class, skimage image, hand-set box (x0, y0, x1, y1) in source pixels
    "cat": ("chelsea", (100, 60, 330, 300)),
    "cup": ("coffee", (170, 15, 410, 330)),
    "person": ("astronaut", (20, 10, 370, 512)),
}


def test_real_photographs_default_preprocessing(tmp_path):
    import skimage.data
    for cls, (name, box) in PHOTOS.items():
        write_sample(tmp_path / "images", tmp_path / "boxes", cls, name, getattr(skimage.data, name)(), box)
    res = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--out",
                  tmp_path / "out", "--quiet")
    assert res.returncode == 0, res.stderr
    assert "built 3 images" in res.stdout
    for row in manifest(tmp_path / "out").values():
        x0, y0, x1, y1 = map(int, row["box"].split())
        m = np.load(tmp_path / "out" / "fg_mask" / "val" / f"{row['image']}.npy").astype(bool)
        assert m.shape == (224, 224)
        assert png(tmp_path / "out" / "original" / "val" / f"{row['image']}.png").shape == (224, 224, 3)
        inside = np.zeros_like(m)
        inside[y0:y1, x0:x1] = True
        assert not (m & ~inside).any()
        assert m[inside].mean() >= 0.1


def test_every_reject_reason(tmp_path):
    images, boxes = tmp_path / "images", tmp_path / "boxes"
    good = generate(1, size=64, seed=2)
    for i, s in enumerate(good[:2]):
        write_sample(images, boxes, "a", f"good{i}", s.image, s.box)
    s = good[2]
    write_sample(images, boxes, "a", "several", s.image, s.box, (1, 1, 10, 10))
    write_sample(images, boxes, "a", "outside", s.image, (40, 40, 90, 90))
    write_sample(images, boxes, "a", "uniform", np.full((64, 64, 3), 128, np.uint8), (16, 16, 48, 48))
    write_sample(images, boxes, "a", "large", s.image, (0, 0, 64, 62))
    Image.fromarray(s.image).save(images / "a" / "unannotated.png")
    (images / "a" / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    (boxes / "a" / "corrupt.xml").write_text(voc_xml(s.box))
    (images / "a" / "notes.txt").write_text("not an image")
    Image.fromarray(s.image).save(images / "a" / "badxml.png")
    (boxes / "a" / "badxml.xml").write_text("<annotation><object>")
    res = run_cli("build", "--images", images, "--boxes", boxes, "--out", tmp_path / "out", "--no-resize", "--quiet")
    assert res.returncode == 0, res.stderr
    reasons = {r["source"]: r["reason"] for r in read_csv(tmp_path / "out" / "rejects.csv")}
    assert reasons == {
        "a/several.png": "several_boxes", "a/outside.png": "box_outside_image", "a/uniform.png": "grabcut_failed",
        "a/large.png": "box_too_large", "a/unannotated.png": "missing_annotation",
        "a/corrupt.png": "unreadable_image", "a/notes.txt": "unsupported_file", "a/badxml.png": "bad_annotation",
    }
    assert "built 2 images" in res.stdout and "rejected 8" in res.stdout


def test_box_cropped_by_center_crop(tmp_path):
    img = generate(1, size=64, seed=2)[0].image
    wide = np.concatenate([img, img, img], axis=1)  # 192x64: a 64x64 center crop keeps the middle copy
    write_sample(tmp_path / "images", tmp_path / "boxes", "a", "edge", wide, (0, 10, 40, 50))
    write_sample(tmp_path / "images", tmp_path / "boxes", "a", "uniform", np.zeros_like(wide), (70, 10, 110, 50))
    res = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--out",
                  tmp_path / "out", "--resize", "64", "--crop", "64", "--quiet")
    assert res.returncode == 2
    assert {r["reason"] for r in read_csv(tmp_path / "out" / "rejects.csv")} == {"box_cropped", "grabcut_failed"}


def test_coco_polygon_supplies_the_mask(tmp_path):
    image = np.zeros((80, 100, 3), np.uint8)
    image[:] = (30, 120, 40)
    poly = [20.0, 20.0, 60.0, 22.0, 50.0, 60.0, 25.0, 55.0]
    mask = rasterize_polygons([poly], 80, 100)
    image[mask] = (200, 40, 40)
    (tmp_path / "images" / "a").mkdir(parents=True)
    Image.fromarray(image).save(tmp_path / "images" / "a" / "poly.png")
    Image.fromarray(image).save(tmp_path / "images" / "a" / "boxonly.png")
    coco = {"images": [{"id": 1, "file_name": "a/poly.png", "width": 100, "height": 80},
                       {"id": 2, "file_name": "boxonly.png", "width": 100, "height": 80}],
            "annotations": [{"id": 1, "image_id": 1, "bbox": [20, 20, 40, 40], "segmentation": [poly]},
                            {"id": 2, "image_id": 2, "bbox": [20, 20, 40, 40]}],
            "categories": [{"id": 1, "name": "a"}]}
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    assert set(load_annotations(tmp_path / "coco.json")) == {"a/poly", "poly", "boxonly"}
    res = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "coco.json", "--out",
                  tmp_path / "out", "--no-resize", "--quiet")
    assert res.returncode == 0, res.stderr
    sources = {r["image"]: r["mask_source"] for r in read_csv(tmp_path / "out" / "manifest.csv")}
    assert sources == {"a/poly": "coco", "a/boxonly": "grabcut"}
    assert np.array_equal(np.load(tmp_path / "out" / "fg_mask" / "val" / "a" / "poly.npy"), mask)


def test_nothing_built_exits_2_with_one_line(tmp_path):
    write_sample(tmp_path / "images", tmp_path / "boxes", "a", "flat", np.zeros((48, 48, 3), np.uint8), (8, 8, 30, 30))
    res = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--out",
                  tmp_path / "out", "--no-resize", "--quiet")
    assert_one_line_error(res, "nothing could be built")
    assert read_csv(tmp_path / "out" / "rejects.csv")[0]["reason"] == "grabcut_failed"


def test_bad_arguments_are_one_line_errors(tmp_path):
    res = run_cli("build", "--images", tmp_path / "nope", "--boxes", tmp_path, "--out", tmp_path / "out")
    assert_one_line_error(res, str(tmp_path / "nope"))


def test_preprocess_matches_torchvision():
    tvf = pytest.importorskip("torchvision.transforms.functional")
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (90, 131, 3), dtype=np.uint8)
    pre = Preprocess(resize=64, crop=56)
    expected = np.asarray(tvf.center_crop(tvf.resize(Image.fromarray(img), 64), 56))
    assert np.array_equal(pre.image(img), expected)
    box, kept = pre.box((0, 0, 131, 90), 90, 131)
    assert box == (0, 0, 56, 56) and kept == pytest.approx(56 * 56 / (64 * 93), rel=0.02)


def test_round_trip_eval_and_balance(tmp_path, synth_build):
    root = synth_build[0]
    res = run_cli("build", "--images", root / "images", "--boxes", root / "boxes", "--out", tmp_path / "out",
                  "--no-resize", "--balance", "--workers", "2", "--quiet")
    assert res.returncode == 0, res.stderr
    res = run_cli("eval", "--model", "timm:test_resnet", "--data", tmp_path / "out", "--quiet",
                  "--db", tmp_path / "r.db")
    assert res.returncode == 0, res.stderr
    assert "BG-Gap" in res.stdout and all(v in res.stdout for v in ("only_bg_t", "mixed_next"))
    again = run_cli("build", "--images", root / "images", "--boxes", root / "boxes", "--out", tmp_path / "out",
                    "--no-resize", "--quiet")
    assert_one_line_error(again, "--overwrite")


def test_build_preview_shows_each_images_original_mask_and_variants(tmp_path):
    """`--preview` writes a contact sheet beside the build: a row per image (classes in turn), the
    original and its mask first, then each variant; the cells are the built files' pixels."""
    from bgbench.drawing.contact import HEADER, NAME, PAD, SIDE, VARIANTS
    _synth_with_masks(tmp_path)
    res = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--masks",
                  tmp_path / "masks", "--out", tmp_path / "out", "--no-resize", "--quiet", "--preview")
    assert res.returncode == 0, res.stderr
    sheet_path = tmp_path / "out-preview-val.png"
    assert f"preview: {sheet_path}" in res.stdout and not (tmp_path / "out" / sheet_path.name).exists()
    sheet = np.asarray(Image.open(sheet_path).convert("RGB"))
    variants = [v for v in VARIANTS if (tmp_path / "out" / v / "val").is_dir()]
    assert sheet.shape[1] == PAD + (2 + len(variants)) * (SIDE + PAD)
    built = sorted(p.relative_to(tmp_path / "out" / "original" / "val").with_suffix("").as_posix()
                   for p in (tmp_path / "out" / "original" / "val").rglob("*.png"))
    assert sheet.shape[0] == HEADER + PAD + len(built) * (SIDE + NAME + PAD)
    for r, image_id in enumerate(built):  # one image per class: the rows are the sorted ids
        y = HEADER + PAD + r * (SIDE + NAME + PAD)
        assert (sheet[y + SIDE:y + SIDE + NAME, PAD:PAD + SIDE] < 128).any()  # its name, written under it
        cell = lambda c: sheet[y:y + 64, PAD + c * (SIDE + PAD):PAD + c * (SIDE + PAD) + 64]  # noqa: E731
        original = np.asarray(Image.open(tmp_path / "out" / "original" / "val" / f"{image_id}.png").convert("RGB"))
        mask = np.load(tmp_path / "out" / "fg_mask" / "val" / f"{image_id}.npy")
        assert np.array_equal(cell(0), original)
        assert np.array_equal(cell(1)[..., 0] > 127, mask)
        rand = np.asarray(Image.open(tmp_path / "out" / "mixed_rand" / "val" / f"{image_id}.png").convert("RGB"))
        assert np.array_equal(cell(2 + variants.index("mixed_rand")), rand)


@pytest.mark.parametrize("what", ["a user's file", "a link to a file outside", "a folder"])
def test_preview_never_replaces_or_writes_through_what_is_not_its_own(what, tmp_path):
    """The preview's path beside the build holds something bgbench did not write: one line before
    the build, and that thing is as it was; a rebuild replaces bgbench's own preview."""
    _synth_with_masks(tmp_path)
    target, outside = tmp_path / "out-preview-val.png", tmp_path / "elsewhere" / "mine.png"
    outside.parent.mkdir()
    outside.write_bytes(b"my own picture")
    if what == "a user's file":
        target.write_bytes(b"my own picture")
    elif what == "a folder":
        target.mkdir()
    else:
        target.symlink_to(outside)
    args = ["build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--masks", tmp_path / "masks",
            "--out", tmp_path / "out", "--no-resize", "--quiet", "--preview"]
    assert_one_line_error(run_cli(*args), "--preview", str(target))
    assert not (tmp_path / "out").exists() and outside.read_bytes() == b"my own picture"
    assert target.is_dir() or target.is_symlink() or target.read_bytes() == b"my own picture"
    if target.is_symlink() or target.is_file():
        target.unlink()
    else:
        target.rmdir()
    assert run_cli(*args).returncode == 0
    first = target.read_bytes()
    again = run_cli(*args[:-2], "--overwrite", "--quiet", "--preview")
    assert again.returncode == 0, again.stderr
    assert target.read_bytes() == first  # its own preview, written again
