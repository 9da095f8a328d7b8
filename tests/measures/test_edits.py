"""ImageNet-E attribute edits: the pure functions, GLCM, backends, the pipeline and the CLI."""
import csv
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from bgbench.edits import functions as F
from bgbench.edits.complexity import spectrum_edit
from bgbench.edits.functions import LEVELS, glcm_stats
from conftest import assert_one_line_error, run_cli


def _ellipse(h, w, cx, cy, rx, ry):
    yy, xx = np.mgrid[:h, :w]
    return ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1


def _scene(seed, h=48, w=48):
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    mask = _ellipse(h, w, rng.uniform(w / 3, 2 * w / 3), rng.uniform(h / 3, 2 * h / 3), rng.uniform(w / 10, w / 4),
                    rng.uniform(h / 10, h / 4))
    return image, mask


# ---------------------------------------------------------------------------------------------
# pure functions

def test_pixel_rate_and_box_by_hand():
    m = np.zeros((10, 20), bool)
    m[2:5, 3:7] = True  # 12 pixels of 200
    assert F.pixel_rate(m) == pytest.approx(0.06)
    assert F.object_extent(m) == (3, 2, 6, 4)


def test_eq7_matrices_by_hand():
    s = F.scale_matrix(0.5, (10.0, 4.0))  # dx = (1 - s) * cx
    assert np.allclose(s, [[0.5, 0, 5], [0, 0.5, 2]])
    r = F.rotation_matrix(90, (0.0, 0.0))
    assert np.allclose(r @ [1, 0, 1], [0, -1], atol=1e-12)  # OpenCV: counter-clockwise on screen
    both = F.compose(F.translation_matrix(1, 2), s)
    assert np.allclose(both @ [10, 4, 1], [11, 6])  # the centre stays, then moves by (1, 2)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), rate=st.sampled_from([None, 0.1, 0.08, 0.05]))
def test_size_reaches_its_pixel_rate_within_10_percent(seed, rate):
    image, mask = _scene(seed)
    bg = np.zeros_like(image)
    out, m, matrix, s = F.scale_for_rate(image, mask, bg, rate)
    x0, y0, x1, y1 = F.mapped_extent(matrix, mask)
    assert x0 >= -1e-6 and y0 >= -1e-6 and x1 <= 47 + 1e-6 and y1 <= 47 + 1e-6
    if rate is None:  # full: the object touches two opposite sides, so no larger scale fits
        assert max(x1 - x0, y1 - y0) == pytest.approx(47)
    else:
        assert abs(F.pixel_rate(m) - rate) <= 0.1 * rate


def _rect_mask(h, w, x0, y0, x1, y1):
    m = np.zeros((h, w), bool)
    m[y0:y1 + 1, x0:x1 + 1] = True
    return m


def _expected_rotation(h, w, x0, y0, x1, y1, degrees):
    """Worked out here, apart from bgbench: Eq. 7's T_direction, [[cos, sin], [-sin, cos]] (OpenCV's
    sign), about the box centre, then the least shift that brings the rotated pixel centres of the
    rectangle (its four corner pixels are the extremes) inside the image. None: it cannot fit."""
    t = math.radians(degrees)
    rot = np.array([[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]])
    c = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    corners = np.array([[x0, y0], [x1, y0], [x0, y1], [x1, y1]], float)
    moved = (corners - c) @ rot.T + c
    lo, hi = moved.min(axis=0), moved.max(axis=0)
    if (hi - lo > np.array([w - 1, h - 1]) + 1e-6).any():
        return None
    shift = np.where(lo < 0, -lo, np.where(hi > [w - 1, h - 1], np.array([w - 1, h - 1]) - hi, 0.0))
    return np.hstack([rot, (c - rot @ c + shift)[:, None]])


def _bilinear_rect(h, w, x0, y0, x1, y1, matrix):
    """The rectangle's mask warped by `matrix` with bilinear sampling, computed here: at each output
    pixel p the source point q = M^-1 p; bilinear interpolation of a rectangle's indicator is
    separable, g(qx) * g(qy), with g the 1-D linear ramp over one pixel on each side."""
    inv = np.linalg.inv(np.vstack([matrix, [0, 0, 1]]))[:2]
    yy, xx = np.mgrid[:h, :w]
    qx, qy = (inv @ np.stack([xx.ravel(), yy.ravel(), np.ones(xx.size)])).reshape(2, h, w)
    gx = np.clip(np.minimum(qx - (x0 - 1), (x1 + 1) - qx), 0, 1)
    gy = np.clip(np.minimum(qy - (y0 - 1), (y1 + 1) - qy), 0, 1)
    return gx * gy


@pytest.mark.parametrize("h, w, box, degrees", [
    (64, 64, (44, 0, 63, 7), 90),   # pokes out of the top once rotated: shifted down, same size
    (64, 64, (44, 0, 63, 7), 30),
    (48, 48, (10, 20, 33, 27), 45),
    (24, 64, (46, 16, 59, 21), 90),  # as in the pipeline test below
])
def test_rotation_is_a_rigid_move_checked_against_an_independent_warp(h, w, box, degrees):
    """The edit's matrix is exactly T_direction plus a shift (no scale: the object keeps its size),
    and its mask is the independently warped rectangle. OpenCV samples at 1/32 px, so only pixels
    whose interpolated value lies within 1/16 of the 0.5 threshold may differ; the area ratio
    then lies within the share of such pixels of the expected ratio."""
    mask = _rect_mask(h, w, *box)
    want = _expected_rotation(h, w, *box, degrees)
    matrix = F.rotate(mask, degrees)
    assert np.allclose(matrix, want, atol=1e-9)
    assert abs(np.linalg.det(matrix[:, :2]) - 1) < 1e-12  # what a shrink would break
    _, got = F.warp_object(np.zeros((h, w, 3), np.uint8), mask, matrix)
    value = _bilinear_rect(h, w, *box, want)
    ambiguous = np.abs(value - 0.5) <= 1 / 16
    assert not ((got != (value > 0.5)) & ~ambiguous).any()
    ratio = F.area_ratio(mask, got)
    assert abs(ratio - (value > 0.5).sum() / mask.sum()) <= ambiguous.sum() / mask.sum()
    # the ratio that bilinear sampling of a rectangle allows at all: its > 0.5 region is the box grown
    # by half a pixel with four corners cut (each of area 0.5 ln 2 - 1/4), and a lattice count of a
    # convex region of area A and perimeter P lies within P/2 + 1 of A
    bw, bh = box[2] - box[0] + 1, box[3] - box[1] + 1
    area = bw * bh - 4 * (0.5 * math.log(2) - 0.25)
    assert abs(ratio * mask.sum() - area) <= (2 * (bw + bh)) / 2 + 1
    if degrees == 90:  # integer sampling points: exact
        assert ratio == 1.0 and np.array_equal(got, value > 0.5)


@pytest.mark.parametrize("degrees", [90, 30])
def test_rotation_that_cannot_fit_is_refused_not_shrunk(degrees):
    """A 60 x 4 bar in a 64 x 24 image: upright, or at 30 degrees (29.5 + 2.6 px tall), it is taller
    than the image. The old edit shrank it to fit; now it does not fit and is rejected."""
    mask = _rect_mask(24, 64, 2, 10, 61, 13)
    assert _expected_rotation(24, 64, 2, 10, 61, 13, degrees) is None
    with pytest.raises(F.DoesNotFit):
        F.rotate(mask, degrees)
    assert _expected_rotation(24, 64, 2, 10, 61, 13, 10) is not None  # 10 degrees: 13.2 px tall, fits
    assert np.allclose(F.rotate(mask, 10), _expected_rotation(24, 64, 2, 10, 61, 13, 10), atol=1e-9)


def test_rotation_keeps_the_size_or_refuses():
    """Long thin ellipses at random angles: either their rotated pixel centres (computed here) span
    more than the image and the edit refuses, or the matrix is a pure rotation plus a shift that
    keeps the object inside. Both happen among these 60 draws."""
    rng = np.random.default_rng(0)
    outcomes = set()
    for _ in range(60):
        angle = float(rng.uniform(-360, 360))
        mask = _ellipse(48, 48, rng.uniform(12, 36), rng.uniform(12, 36), rng.uniform(5, 26), rng.uniform(2, 8))
        t = math.radians(angle)
        rot = np.array([[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]])
        ys, xs = np.nonzero(mask)
        pts = np.stack([xs, ys], axis=1) @ rot.T
        fits = bool((pts.max(axis=0) - pts.min(axis=0) <= 47 + 1e-6).all())
        outcomes.add(fits)
        if not fits:
            with pytest.raises(F.DoesNotFit):
                F.rotate(mask, angle)
            continue
        matrix = F.rotate(mask, angle)
        assert np.allclose(matrix[:, :2], rot, atol=1e-9)
        x0, y0, x1, y1 = F.mapped_extent(matrix, mask)
        assert x0 >= -1e-6 and y0 >= -1e-6 and x1 <= 47 + 1e-6 and y1 <= 47 + 1e-6
    assert outcomes == {True, False}


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_random_position_keeps_the_object_inside(seed):
    _, mask = _scene(seed)
    matrix = F.random_position(mask, np.random.default_rng(seed))
    x0, y0, x1, y1 = F.mapped_extent(matrix, mask)
    assert x0 >= 0 and y0 >= 0 and x1 <= 47 and y1 <= 47
    assert np.allclose(matrix[:, :2], np.eye(2))  # a pure translation


def test_positions_vary_with_the_generator():
    _, mask = _scene(1)
    shifts = {tuple(F.random_position(mask, np.random.default_rng(k))[:, 2]) for k in range(10)}
    assert len(shifts) > 5


def test_inpainting_removes_the_object():
    image = np.full((32, 32, 3), 200, np.uint8)
    mask = _ellipse(32, 32, 16, 16, 6, 6)
    image[mask] = (10, 20, 30)
    out = F.inpaint_telea(image, mask)
    assert np.abs(out[mask].astype(int) - 200).max() <= 2


# ---------------------------------------------------------------------------------------------
# complexity and GLCM

@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.sampled_from([-20.0, 20.0, 5.0, -1.0]))
def test_background_edit_leaves_the_object_bit_identical(seed, lam):
    image, mask = _scene(seed, 24, 24)
    out = spectrum_edit(image, mask, lam, steps=3)
    assert out.dtype == np.uint8 and out.shape == image.shape
    assert np.array_equal(out[mask], image[mask])
    assert not np.array_equal(out[~mask], image[~mask])


def test_glcm_of_stripes_by_hand():
    g = np.zeros((8, 8, 3), np.uint8)
    g[:, 1::2] = 255  # alternating columns: grey levels 0 and LEVELS - 1
    contrast, dissim = glcm_stats(g)
    d = LEVELS - 1
    # 0 and 45 and 135 degrees: every pair differs by d; 90 degrees: no pair differs
    assert contrast == pytest.approx(3 * d * d / 4)
    assert dissim == pytest.approx(3 * d / 4)


def test_glcm_ignores_object_pixels():
    g = np.zeros((8, 8, 3), np.uint8)
    g[:, 4:] = 255
    mask = np.zeros((8, 8), bool)
    mask[:, 3:5] = True  # the only edge lies inside the object
    assert glcm_stats(g, mask) == (0.0, 0.0)
    assert glcm_stats(g)[0] > 0


# ---------------------------------------------------------------------------------------------
# the pipeline and CLI

def _manifest(out):
    with open(out / "manifest.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_complexity_levels_order_glcm_contrast(synth_root, tmp_path):
    out = tmp_path / "edits"
    proc = run_cli("edit", "--data", synth_root, "--out", out, "--levels", "complexity_*", "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    means = {m["level"]: m["glcm_contrast"] for m in doc["levels"]}
    assert means["complexity_-20"] < means["original"] < means["complexity_20"]
    assert "complexity_adv: needs --model" in proc.stderr
    rows = _manifest(out)
    by_level = {}
    for r in rows:
        by_level.setdefault(r["folder"], []).append(json.loads(r["params"])["glcm_contrast"])
    assert np.mean(by_level["complexity_20"]) == pytest.approx(means["complexity_20"], abs=1e-3)
    for r in rows:  # object pixels are never changed by a background edit
        if r["folder"].startswith("complexity"):
            a = np.asarray(Image.open(out / r["folder"] / "val" / f"{r['image']}.png"))
            o = np.asarray(Image.open(out / "original" / "val" / f"{r['image']}.png"))
            m = np.load(out / "fg_mask" / "val" / f"{r['image']}.npy").astype(bool)
            assert np.array_equal(a[m], o[m])


def test_edit_eval_analyze_end_to_end(synth_root, tmp_path):
    out = tmp_path / "edits"
    proc = run_cli("edit", "--data", synth_root, "--out", out, "--levels", "remove", "size_full", "size_0.05",
                   "position_*", "rotation_*", "--angles", "90", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "edit run 1 stored in" in proc.stderr and "stored in" not in proc.stdout  # status, not a result
    levels = {"original", "remove", "size_full", "size_0.05", "position_random", "rotation_90"}
    assert levels <= {p.name for p in out.iterdir()}
    assert (out / "fg_mask" / "val").is_dir()
    rows = _manifest(out)
    for r in rows:
        params = json.loads(r["params"])
        if r["folder"].startswith("size_0") or r["folder"] == "position_random":
            target = 0.05 if r["folder"] == "position_random" else float(r["folder"][5:])
            assert abs(float(r["fg_fraction"]) - target) <= 0.1 * target
        if r["folder"] == "rotation_90":
            assert params["angle"] == 90
    ev = run_cli("eval", "--model", "timm:test_resnet", "--data", out, "--json", "--quiet")
    assert ev.returncode == 0, ev.stderr
    doc = json.loads(ev.stdout)
    run_id = doc["run_id"]  # eval --json names the run it stored
    from bgbench.store import Store
    with Store() as store:
        run = store.runs("eval")[-1]
        assert json.loads(run["config"])["ten_crop"] is False
        assert {r["variant"] for r in store.predictions(run["id"])} == levels
        edit_run = store.runs("edit")[-1]
        assert edit_run["data_fingerprint"] and json.loads(edit_run["outputs"])["images"] == 36
    an = run_cli("analyze", "edits", run["id"], "--json", "--bootstrap", "200")
    assert an.returncode == 0, an.stderr
    model = json.loads(an.stdout)["models"][0]
    assert model["model"] == "timm:test_resnet"
    got = {lv["variant"]: lv for lv in model["levels"]}
    assert set(got) == levels - {"original"}
    written = {v: len(list((out / v / "val").rglob("*.png"))) for v in levels}
    correct = {}
    with Store() as store:
        for r in store.predictions(run["id"]):
            correct.setdefault(r["variant"], {})[r["image_id"]] = r["pred"] == r["label"]
    for v, lv in got.items():
        assert lv["lo"] <= lv["drop"] <= lv["hi"] and lv["n"] == written[v] >= 30
        same = [i for i in correct[v] if i in correct["original"]]  # the drop, worked out from the rows
        assert lv["drop"] == pytest.approx(np.mean([correct["original"][i] for i in same])
                                           - np.mean([correct[v][i] for i in same]))
    assert run_id == run["id"]


def test_eval_ten_crop_is_recorded(synth_root):
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--variants", "original",
                   "--ten-crop", "--quiet", "--batch-size", "8")
    assert proc.returncode == 0, proc.stderr
    from bgbench.store import Store
    with Store() as store:
        assert json.loads(store.runs("eval")[-1]["config"])["ten_crop"] is True


def test_edit_rejects_a_rotation_that_does_not_fit_and_records_the_area_ratio(tmp_path):
    """A 64 x 24 dataset: a 60 x 4 bar cannot stand upright in it (a reject, as size and position
    rejects are), a 14 x 6 box can, shifted 2 px up, at its full size (area ratio 1, exact at 90°)."""
    data = tmp_path / "data"
    rng = np.random.default_rng(0)
    for name, box in {"bar": (2, 10, 61, 13), "box": (46, 16, 59, 21)}.items():
        for folder, ext in (("original", "png"), ("fg_mask", "npy")):
            (data / folder / "val" / "00_a").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (24, 64, 3), dtype=np.uint8)).save(data / "original" / "val" / "00_a" /
                                                                                  f"{name}.png")
        np.save(data / "fg_mask" / "val" / "00_a" / f"{name}.npy", _rect_mask(24, 64, *box).astype(np.uint8))
    out = tmp_path / "edits"
    proc = run_cli("edit", "--data", data, "--out", out, "--levels", "rotation_90", "--angles", "90", "--quiet")
    assert proc.returncode == 0, proc.stderr
    with open(out / "rejects.csv", newline="") as f:
        rejects = list(csv.DictReader(f))
    assert [(r["image"], r["folder"], r["reason"]) for r in rejects] == [("00_a/bar", "rotation_90", "does_not_fit")]
    rows = [r for r in _manifest(out) if r["folder"] == "rotation_90"]
    assert [r["image"] for r in rows] == ["00_a/box"]
    params = json.loads(rows[0]["params"])
    assert params["angle"] == 90 and params["area_ratio"] == 1.0
    assert float(rows[0]["fg_fraction"]) == pytest.approx(14 * 6 / (64 * 24), abs=1e-5)  # the size is kept
    assert np.allclose(np.array(params["matrix"]).reshape(2, 3),
                       _expected_rotation(24, 64, 46, 16, 59, 21, 90), atol=1e-4)


def test_one_and_two_workers_write_identical_bytes(synth_root, tmp_path):
    args = ["--data", synth_root, "--levels", "remove", "size_0.05", "position_random", "rotation_random",
            "complexity_20", "--quiet", "--seed", "3"]
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert run_cli("edit", *args, "--out", out, "--workers", workers).returncode == 0
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert len(files) > 36 * 6
    assert files == sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f


def test_a_fresh_process_forks_workers_that_can_take_gradients():
    """In a fresh interpreter the check says yes (this test's own process may have started autograd's
    threads already: the suite's earlier tests do, which is how the failure was found)."""
    import subprocess
    import sys
    code = ("import sys; from bgbench.data.pool import autograd_survives_fork; "
            "sys.exit(0 if autograd_survives_fork() else 3)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_where_forked_workers_cannot_take_gradients_the_edits_run_here_and_write_the_same(synth_root, tmp_path,
                                                                                          monkeypatch):
    """Once a process has started autograd's threads, torch refuses gradients in its forked children:
    every complexity edit of a two-worker run was filed as rejected (seen in the suite). The pool now
    asks a forked child first and, where it cannot, edits in this process, with a warning."""
    from bgbench.data import pool
    args = ["--data", synth_root, "--levels", "complexity_20", "--quiet", "--seed", "3"]
    assert run_cli("edit", *args, "--out", tmp_path / "w1", "--workers", 1).returncode == 0
    monkeypatch.setattr(pool, "autograd_survives_fork", lambda: False)
    proc = run_cli("edit", *args, "--out", tmp_path / "w2", "--workers", 2)
    assert proc.returncode == 0 and "cannot run in forked workers" in proc.stderr
    files = sorted(p.relative_to(tmp_path / "w1") for p in (tmp_path / "w1").rglob("*") if p.is_file())
    assert any(str(f).startswith("complexity_20/") for f in files)
    assert files == sorted(p.relative_to(tmp_path / "w2") for p in (tmp_path / "w2").rglob("*") if p.is_file())
    for f in files:
        assert (tmp_path / "w1" / f).read_bytes() == (tmp_path / "w2" / f).read_bytes(), f


def test_bad_masks_are_rejected_not_fatal(synth_copy, tmp_path):
    masks = sorted((synth_copy / "fg_mask" / "val").rglob("*.npy"))
    masks[0].write_bytes(b"not a numpy file")
    np.save(masks[1], np.zeros((5, 5), np.uint8))
    np.save(masks[2], np.zeros((32, 32), np.uint8))
    masks[3].unlink()
    out = tmp_path / "edits"
    proc = run_cli("edit", "--data", synth_copy, "--out", out, "--levels", "remove", "--quiet")
    assert proc.returncode == 0, proc.stderr
    with open(out / "rejects.csv", newline="") as f:
        rejects = {r["image"]: r["reason"] for r in csv.DictReader(f)}
    ids = [f"{m.parent.name}/{m.stem}" for m in masks[:4]]
    assert [rejects[i] for i in ids] == ["bad_mask", "bad_mask", "empty_mask", "missing_mask"]
    assert len(list((out / "remove" / "val").rglob("*.png"))) == 36 - 4
    assert not (out / "original" / "val" / f"{ids[0]}.png").exists()


def test_a_failing_edit_rejects_that_level_only(synth_root, tmp_path):
    from bgbench.edits.registry import _COMPLEXITY, register_complexity_editor

    @register_complexity_editor("test-broken")
    def broken(image, mask, lam):
        if lam > 0:
            raise RuntimeError("this backend cannot add texture")
        return image

    try:
        out = tmp_path / "edits"
        proc = run_cli("edit", "--data", synth_root, "--out", out, "--levels", "complexity_*",
                       "--complexity-editor", "test-broken", "--quiet")
        assert proc.returncode == 0, proc.stderr
        with open(out / "rejects.csv", newline="") as f:
            rejects = list(csv.DictReader(f))
        assert len(rejects) == 36 and {r["folder"] for r in rejects} == {"complexity_20"}
        assert all(r["reason"] == "edit_failed" and "cannot add texture" in r["detail"] for r in rejects)
        assert len(list((out / "complexity_-20" / "val").rglob("*.png"))) == 36
    finally:
        _COMPLEXITY.pop("test-broken", None)


def test_a_bug_in_a_backend_stops_the_run_instead_of_rejecting_every_image(synth_root, tmp_path):
    """Only what says an image cannot be edited (ValueError, RuntimeError, cv2.error) rejects it; a
    TypeError is a bug, and filing it as 36 rejected images would hide it."""
    from bgbench.edits.registry import _COMPLEXITY, register_complexity_editor
    from bgbench.edits.pipeline import EditConfig, edit_dataset

    @register_complexity_editor("test-buggy")
    def buggy(image, mask, lam):
        return image + None  # TypeError

    try:
        with pytest.raises(TypeError):
            edit_dataset(EditConfig(synth_root, tmp_path / "edits", levels=("complexity_20",),
                                    complexity_editor="test-buggy"), progress=False)
        assert not (tmp_path / "edits" / "rejects.csv").exists()
    finally:
        _COMPLEXITY.pop("test-buggy", None)


def test_a_registered_inpainter_is_used(synth_root, tmp_path):
    from bgbench.edits.registry import _INPAINTERS, register_inpainter

    @register_inpainter("test-grey")
    def grey(image, mask):
        out = image.copy()
        out[mask] = 128
        return out

    try:
        out = tmp_path / "edits"
        assert run_cli("edit", "--data", synth_root, "--out", out, "--levels", "remove", "--inpainter", "test-grey",
                       "--quiet").returncode == 0
        some = sorted((out / "remove" / "val").rglob("*.png"))[0]
        mask = np.load(out / "fg_mask" / "val" / some.parent.name / f"{some.stem}.npy").astype(bool)
        assert (np.asarray(Image.open(some))[mask] == 128).all()
    finally:
        _INPAINTERS.pop("test-grey", None)


def test_adversarial_level_raises_the_loss(synth_root, tmp_path):
    import torch
    from bgbench.edits.complexity import adversarial_backgrounds
    from bgbench.data.in9 import discover
    from bgbench.models import create_model
    model = create_model("timm:test_resnet")
    layout = discover(synth_root, variants=["original"])
    items = layout.items("original")[:8]
    images = [np.asarray(Image.open(it.path).convert("RGB")) for it in items]
    masks = [np.load(layout.mask_path(it.image_id)).astype(bool) for it in items]
    labels = [it.label for it in items]
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255
    outs = adversarial_backgrounds(model, x, torch.from_numpy(np.stack(masks)).float()[:, None], labels,
                                   eps=8 / 255, steps=3)
    assert outs.shape == (8, *images[0].shape) and outs.dtype == np.uint8

    def loss(batch):
        x = torch.from_numpy(np.stack(batch)).permute(0, 3, 1, 2).float() / 255
        with torch.no_grad():
            return torch.nn.functional.cross_entropy(model(x), torch.tensor(labels)).item()
    assert loss(outs) > loss(images)
    for o, i, m in zip(outs, images, masks):
        assert np.array_equal(o[m], i[m])
        assert np.abs(o.astype(int) - i).max() <= 8 + 1


@pytest.mark.parametrize("args,needles", [
    (["--levels", "nothing_*"], ["--levels", "selects no edit level"]),
    (["--adv-eps", "0"], ["--adv-eps"]),
    (["--workers", "0"], ["--workers"]),
    (["--inpainter", "lama"], ["--inpainter", "lama", "telea"]),
])
def test_bad_options_are_one_line_errors(synth_root, tmp_path, args, needles):
    assert_one_line_error(run_cli("edit", "--data", synth_root, "--out", tmp_path / "o", *args), *needles)


def test_data_without_masks_is_a_one_line_error(synth_copy, tmp_path):
    import shutil
    shutil.rmtree(synth_copy / "fg_mask")
    assert_one_line_error(run_cli("edit", "--data", synth_copy, "--out", tmp_path / "o"), "fg_mask", "masks")


def test_existing_output_needs_overwrite(synth_root, tmp_path):
    out = tmp_path / "o"
    assert run_cli("edit", "--data", synth_root, "--out", out, "--levels", "remove", "--quiet").returncode == 0
    assert_one_line_error(run_cli("edit", "--data", synth_root, "--out", out, "--levels", "remove"), "--overwrite")


def _fake_eval(store, model, rows):
    from bgbench import recording
    result = recording.Outputs(provenance=recording.Provenance("eval", {}, model=model))
    result.table_rows = lambda: {"predictions": [(v, i, 0, 0 if ok else 1, 0.9, None, None, None)
                                                 for v, i, ok in rows]}
    return recording.record(result, store)


def test_edit_drops_by_hand(tmp_path):
    from bgbench.measures.edits.summary import edit_drops, runs_by_model
    from bgbench.errors import BgbenchError
    from bgbench.store import Store
    with Store(tmp_path / "r.db") as store:
        a = _fake_eval(store, "m1", [("original", "c/1", True), ("original", "c/2", True), ("original", "c/3", True),
                                     ("original", "c/4", False), ("size_0.05", "c/1", False),
                                     ("size_0.05", "c/2", True), ("size_0.05", "c/4", False),  # c/3 rejected
                                     ("complexity_20", "c/1", True), ("complexity_20", "c/2", True),
                                     ("complexity_20", "c/3", True), ("complexity_20", "c/4", True)])
        b = _fake_eval(store, "m2", [("original", "c/1", True), ("remove", "c/1", False)])
        got = edit_drops(store, [a], n_boot=200)
        assert got.original.value == 0.75
        lv = {x.variant: x for x in got.levels}
        assert [x.variant for x in got.levels] == ["size_0.05", "complexity_20"]
        # size_0.05 over the shared c/1, c/2, c/4: original 2/3 correct, edited 1/3
        assert lv["size_0.05"].drop.value == pytest.approx(1 / 3) and lv["size_0.05"].drop.n == 3
        assert lv["size_0.05"].acc.value == pytest.approx(1 / 3)
        assert lv["complexity_20"].drop.value == pytest.approx(-0.25)
        assert (lv["size_0.05"].attribute, lv["size_0.05"].level) == ("size", "0.05")
        d = got.to_dict()
        assert d["model"] == "m1" and d["levels"][0]["drop"] == pytest.approx(1 / 3)
        both = [edit_drops(store, ids, n_boot=200) for ids in runs_by_model(store, [a, b])]
        assert [x.model for x in both] == ["m1", "m2"] and both[1].levels[0].drop.value == 1.0
        with pytest.raises(BgbenchError, match="different models"):
            edit_drops(store, [a, b])


def test_analyze_edits_rejects_other_run_kinds(synth_root, tmp_path):
    out = tmp_path / "o"
    assert run_cli("edit", "--data", synth_root, "--out", out, "--levels", "remove", "--quiet").returncode == 0
    from bgbench.store import Store
    with Store() as store:
        rid = store.runs("edit")[-1]["id"]
    assert_one_line_error(run_cli("analyze", "edits", rid), f"RUN {rid}", "'edit'")
    assert_one_line_error(run_cli("analyze", "edits", 9999), "RUN 9999", "no such run")


def test_eval_unknown_variant_folder_is_a_one_line_error(synth_root):
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--variants", "size_9"),
                          "size_9", "missing", "present: ", "mixed_rand")
