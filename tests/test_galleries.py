"""What the report's galleries choose and compute, against tables worked by hand: the hijack
matrix, the examples each gallery picks (by score, never first-n), the saliency overlays, the
thumbnail sheets and full-size copies written once, the noisy copies drawn again without torch, and
the sections' page order."""

import numpy as np
import pytest
from PIL import Image

from bgbench.measures.categories.summary import CATEGORIES, JudgedImages
from bgbench.measures.categories.section import category_examples
from bgbench.measures.challenge.section import most_fooled
from bgbench.measures.edits.section import edit_flips
from bgbench.measures.examples import Pick, top_per_class
from bgbench.measures.noise.section import noise_flips
from bgbench.measures.noise.summary import NoiseRow
from bgbench.measures.challenge.matrix import hijack_matrix, labels_in_layout_order
from bgbench.measures.saliency.overlays import outline, overlay_image
from bgbench.drawing.thumbs import CELL, Thumbnails

# ---------------------------------------------------------------- the hijack matrix, by hand

# classes 0, 1, 2; foregrounds f0, f1 (class 0), f2 (class 1), f3 (class 2);
# backgrounds b0 (class 0), b1, b2 (class 1), b3 (class 2). Each cell: the predicted class.
_M = np.array([[0, 1, 0, 2],    # f0: b1 turns it into 1, b3 into 2
               [0, 0, 0, 0],    # f1: never
               [0, 1, 1, 1],    # f2: b0 turns it into 0; b3 gives 1, not 2: no hijack by class 2
               [255, 1, 2, 2]])  # f3: b1 turns it into 1; b0 gives 'no class' (255), which hijacks nothing
_FG, _BG = np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2])


def test_hijack_matrix_worked_by_hand():
    """Row a, column b: the share of class-a foregrounds some class-b background turns into b.
    (0,1): f0 yes, f1 no -> 1/2. (0,2): f0 yes -> 1/2. (1,0): f2 -> 1. (1,2): f2 with b3 is 1 -> 0.
    (2,0): f3 with b0 is 255 -> 0. (2,1): f3 with b1 -> 1. The diagonal is no hijack: NaN."""
    h = hijack_matrix(_M, _FG, _BG, 3)
    want = np.array([[np.nan, 0.5, 0.5], [1.0, np.nan, 0.0], [0.0, 1.0, np.nan]])
    assert np.array_equal(np.isnan(h), np.isnan(want)) and np.allclose(h[~np.isnan(h)], want[~np.isnan(want)])


def test_hijack_matrix_leaves_empty_classes_out():
    h = hijack_matrix(_M[:, :3], _FG, _BG[:3], 4)  # no background of class 2, no class 3 at all
    assert np.isnan(h[:, 2]).all() and np.isnan(h[3]).all() and np.isnan(h[:, 3]).all()
    assert h[0, 1] == 0.5


def test_a_full_matrix_rows_are_grouped_by_class_so_sorted_labels_are_theirs():
    assert labels_in_layout_order([2, 0, 1, 0]).tolist() == [0, 0, 1, 2]


# ---------------------------------------------------------------- which images each gallery shows

def _judged(rows):
    """rows: (id, label, (pred, conf) on original, mixed_rand, only_bg_t, category)."""
    ids = [r[0] for r in rows]
    preds = {v: np.array([r[2 + k][0] for r in rows]) for k, v in enumerate(("original", "mixed_rand", "only_bg_t"))}
    conf = {v: np.array([r[2 + k][1] for r in rows]) for k, v in enumerate(("original", "mixed_rand", "only_bg_t"))}
    return JudgedImages(ids, np.array([r[1] for r in rows]), np.array([CATEGORIES.index(r[5]) for r in rows]),
                        preds, conf)


def test_category_examples_are_the_most_confident_backgrounds_per_class():
    """Class 0 has three BG Required images; the two whose ONLY-BG-T prediction is the most
    confident are shown (c, then a), never the first two by name; class 1's only one is b2."""
    judged = _judged([
        ("a", 0, (0, .9), (1, .8), (0, .70), "BG Required"),
        ("b", 0, (0, .9), (1, .8), (0, .40), "BG Required"),
        ("c", 0, (0, .9), (2, .8), (0, .95), "BG Required"),
        ("d", 0, (0, .9), (0, .8), (0, .99), "BG Irrelevant"),
        ("b2", 1, (1, .9), (0, .8), (1, .30), "BG Required"),
        ("e", 1, (2, .9), (1, .8), (2, .90), "BG Fools"),
    ])
    picks = category_examples(judged, "BG Required", per_class=2)
    assert [(p.image_id, p.score) for p in picks] == [("c", .95), ("a", .70), ("b2", .30)]
    assert picks[0].detail["preds"] == {"original": 0, "mixed_rand": 2, "only_bg_t": 0}
    assert [p.image_id for p in category_examples(judged, "BG Fools", per_class=2)] == ["e"]


def test_most_fooled_counts_fooling_backgrounds_and_shows_the_strongest():
    """f0 is fooled by b1 and b3 (2 of 4); f2 (class 1) by b0 only (b3 gives 1, its own class);
    f3 (class 2) by b0 (255) and b1 (2 of 4); f1 never. Of f0's fooling backgrounds b1 (ASR .2)
    and b3 (ASR .6), b3 is shown; of f3's, b0 (.5) over b1 (.2). Were every foreground of class
    0, f3 (fooled by all 4) would come first."""
    asr = np.array([0.5, 0.2, 0.1, 0.6])
    picks = most_fooled(_M, ["f0", "f1", "f2", "f3"], _FG, asr, per_class=5)
    got = [(p.image_id, p.detail["fooled_by"], p.detail["bg"], p.detail["pred"]) for p in picks]
    assert got == [("f0", 2, 3, 2), ("f2", 1, 0, 0), ("f3", 2, 0, 255)]
    assert picks[0].score == 0.5
    assert [p.image_id for p in most_fooled(_M, ["f0", "f1", "f2", "f3"], np.array([0, 0, 0, 0]), asr, 1)] == ["f3"]


def test_noise_flips_rank_by_the_lowest_level_where_most_trials_are_wrong():
    """Levels .1 and .2. a: bg .1 one of two trials wrong (not most), bg .2 both -> flips at .2.
    b: fg .1 both wrong -> flips at .1, first wrong trial 0. c: fg .2 two of three wrong, the
    first of them trial 1 -> flips at .2; but c was wrong without noise, so given the eval run it
    is left out. d: never wrong. Ties (a and c at .2) go by image id."""
    rows = []
    wrong = {("a", "bg", .1): (0, 1), ("a", "bg", .2): (1, 1), ("b", "fg", .1): (1, 1), ("b", "fg", .2): (1, 1),
             ("c", "fg", .2): (0, 1, 1), ("c", "fg", .1): (0, 0, 0)}
    for image in "abcd":
        for region in ("fg", "bg"):
            for level in (.1, .2):
                for t, w in enumerate(wrong.get((image, region, level), (0, 0))):
                    rows.append(NoiseRow(image, 0, region, level, t, int(not w), 1 if w else 0))
    picks = noise_flips(rows, per_class=3)
    assert [(p.image_id, p.score, p.detail["region"], p.detail["trial"]) for p in picks] == [
        ("b", .1, "fg", 0), ("a", .2, "bg", 0), ("c", .2, "fg", 1)]
    assert picks[2].detail["wrong"] == pytest.approx(2 / 3)
    clean = {"a": True, "b": True, "c": False, "d": True}
    assert [p.image_id for p in noise_flips(rows, per_class=3, clean_correct=clean)] == ["b", "a"]
    assert [p.image_id for p in noise_flips(rows, per_class=1)] == ["b"]


def test_edit_flips_are_right_before_and_wrong_after_most_confident_first():
    original = {"a": (0, 0, .9), "b": (0, 0, .9), "c": (0, 1, .9), "d": (1, 1, .9), "e": (0, 0, .9)}
    edited = {"a": (0, 2, .4), "b": (0, 1, .8), "c": (0, 2, .9), "d": (1, 0, .5), "e": (0, 0, .9)}
    picks = edit_flips(original, edited, per_class=5)
    assert [(p.image_id, p.detail["after"]) for p in picks] == [("b", 1), ("a", 2), ("d", 0)]
    assert [p.image_id for p in edit_flips(original, edited, per_class=1)] == ["b", "d"]


def test_top_per_class_breaks_ties_by_image_id():
    picks = [Pick("z", 0, 1.0), Pick("y", 0, 1.0), Pick("x", 0, 0.5), Pick("w", 1, 0.1)]
    assert [p.image_id for p in top_per_class(picks, 2)] == ["y", "z", "w"]
    assert [p.image_id for p in top_per_class(picks, 1, lowest_first=True)] == ["x", "w"]


# ---------------------------------------------------------------- saliency overlays

def test_the_outline_is_the_masks_edge():
    mask = np.zeros((5, 6), bool)
    mask[1:4, 1:5] = True  # a 3 x 4 block: its inner pixels are (2, 2) and (2, 3)
    edge = outline(mask)
    assert edge.sum() == 12 - 2 and not edge[2, 2] and not edge[2, 3] and edge[1, 1] and edge[3, 4]
    assert not outline(np.ones((3, 3), bool)).any() and not outline(np.zeros((3, 3), bool)).any()


def test_overlay_blends_jet_over_the_image_and_draws_the_outline_white():
    import matplotlib
    image = np.full((5, 6, 3), 0.2)
    cam = np.zeros((5, 6))
    cam[0, 0] = 1.0
    mask = np.zeros((5, 6), bool)
    mask[1:4, 1:5] = True
    out = overlay_image(image, cam, mask)
    jet = matplotlib.colormaps["jet"]
    expect_hot = np.round(255 * (0.55 * 0.2 + 0.45 * np.array(jet(1.0)[:3]))).astype(np.uint8)
    expect_cold = np.round(255 * (0.55 * 0.2 + 0.45 * np.array(jet(0.0)[:3]))).astype(np.uint8)
    assert out.dtype == np.uint8 and out.shape == (5, 6, 3)
    assert (out[0, 0] == expect_hot).all() and (out[4, 5] == expect_cold).all()
    assert (out[1, 1] == 255).all() and (out[2, 2] == expect_cold).all()  # the edge white, the inside not


# ---------------------------------------------------------------- thumbnails: one sheet per gallery

def _cell(site, thumb) -> np.ndarray:
    """The pixels the page shows for a shot: its rectangle of the decoded sheet."""
    with Image.open(site / thumb.src) as im:
        sheet = np.asarray(im.convert("RGB"))
    return sheet[thumb.y:thumb.y + thumb.height, thumb.x:thumb.x + thumb.width].astype(int)


def test_a_gallery_is_one_sheet_and_only_large_images_get_a_full_copy(tmp_path):
    yy, xx = np.mgrid[0:300, 0:200]
    big = np.stack([yy * 255 // 299, xx * 255 // 199, 255 - yy * 255 // 299], axis=-1).astype(np.uint8)  # 300x200
    small = np.zeros((64, 64, 3), dtype=np.uint8)
    small[16:48, 16:48] = (250, 200, 20)  # a yellow square on black
    Image.fromarray(big).save(tmp_path / "big.png")
    Image.fromarray(small).save(tmp_path / "small.png")
    site = tmp_path / "site"
    thumbs = Thumbnails(site / "figures")
    cells = [thumbs.of_file(tmp_path / "big.png"), thumbs.of_file(tmp_path / "small.png"),
             thumbs.of_file(tmp_path / "big.png"), thumbs.of_array(big)]
    shown = thumbs.sheet(cells)
    assert len({t.src for t in shown}) == 1 and shown[0].src.startswith("figures/thumbs/")
    assert (site / shown[0].src).read_bytes()[8:12] == b"WEBP"
    # the big file: reduced to fit the box, a byte-for-byte full copy; shown twice, one cell
    assert (shown[0].width, shown[0].height, shown[0].zoom) == (64, 96, 1.0) and CELL == 96
    assert (site / shown[0].full).read_bytes() == (tmp_path / "big.png").read_bytes()
    assert shown[2] == shown[0]
    expected = np.asarray(Image.fromarray(big).resize((64, 96), Image.Resampling.LANCZOS)).astype(int)
    assert np.abs(_cell(site, shown[0]) - expected).mean() < 4  # lossy WebP of the reduced image
    # the small file: at its own size, enlarged by the page (zoom), no full copy
    assert (shown[1].width, shown[1].height, shown[1].zoom, shown[1].full) == (64, 64, 1.5, None)
    assert np.abs(_cell(site, shown[1]) - small.astype(int)).mean() < 4
    assert np.abs(_cell(site, shown[1])[:64] - expected[:64]).mean() > 40  # each shot its own rectangle
    # pixels made here (a composite) larger than the box: a lossless full copy
    with Image.open(site / shown[3].full) as im:
        assert np.array_equal(np.asarray(im.convert("RGB")), big)
    # files: one sheet, one copy of the big file, one of the made image; a sheet of the same cells is not rewritten
    written = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert written == sorted({shown[0].src, shown[0].full, shown[3].full})
    again = thumbs.sheet([thumbs.of_file(tmp_path / "big.png"), thumbs.of_file(tmp_path / "small.png"),
                          thumbs.of_file(tmp_path / "big.png"), thumbs.of_array(big)])
    assert again == shown and len(thumbs.paths) == 3 and thumbs.shots == 8


def test_the_report_draws_the_probes_noisy_copies_again_without_torch():
    """The gallery's numpy copy equals the copy the probe's engine makes in torch (`region_noise` on
    the image, as `region_predictions` adds it), pixel for pixel, for both regions and both kinds of
    noise; `draws` imports no torch."""
    import subprocess
    import sys
    import torch
    from bgbench.measures.noise import engine
    from bgbench.measures.noise.draws import noisy_copy
    rng = np.random.default_rng(3)
    image, mask = rng.integers(0, 256, (21, 34, 3), dtype=np.uint8), rng.random((21, 34)) > 0.5
    for kind, level in (("sigma", 0.25), ("sigma", 210 / 255), ("l2", 25.0)):
        for region in ("fg", "bg"):
            x = torch.from_numpy(image.copy()).permute(2, 0, 1).float().div_(255)
            m = torch.from_numpy(mask.copy())[None].float()
            noise = engine.region_noise(m[None], region, float(level), kind, 3,
                                        [engine.draw_seed(7, "c/i", engine.draw_region(region), level)])
            made = (x[None] + noise[2]).clamp_(0, 1)[0]
            expected = made.permute(1, 2, 0).mul(255).round().to(torch.uint8).numpy()
            assert np.array_equal(noisy_copy(image, mask, "c/i", 7, region, level, 2, 3, kind), expected)
    code = "import sys, bgbench.measures.noise.draws; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_galleries_follow_the_sections_with_their_numbers():
    from bgbench.reporting import render  # noqa: F401  (registers every section)
    from bgbench.reporting.sections import list_sections
    names = [s.name for s in list_sections("model")]
    for gallery, numbers in (("challenge_gallery", "challenge"), ("categories_gallery", "categories"),
                             ("noise_gallery", "noise"), ("saliency_gallery", "saliency"), ("edits_gallery", "edits")):
        assert names.index(gallery) == names.index(numbers) + 1, names
    assert names.index("hijack") == names.index("challenge_gallery") + 1
