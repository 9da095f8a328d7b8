"""Definitions of the IN-9 variants, checked as properties over random images, masks and boxes."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.variants import IN9_VARIANTS, get_variant, list_variants
from bgbench.variants.functions import background_strip, only_bg_b, only_bg_t


@st.composite
def scenes(draw):
    h = draw(st.integers(4, 40))
    w = draw(st.integers(4, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x0 = draw(st.integers(0, w - 1))
    x1 = draw(st.integers(x0 + 1, w))
    y0 = draw(st.integers(0, h - 1))
    y1 = draw(st.integers(y0 + 1, h))
    if (x0, y0, x1, y1) == (0, 0, w, h):  # a box covering everything leaves no background
        x1 = w - 1 if w > 1 else x1
        if x1 == w:
            y1 = h - 1
    image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    mask = np.zeros((h, w), bool)
    mask[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < 0.6
    background = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    return image, mask, (x0, y0, x1, y1), background


def box_region(h, w, box):
    x0, y0, x1, y1 = box
    inside = np.zeros((h, w), bool)
    inside[y0:y1, x0:x1] = True
    return inside


@settings(max_examples=150, deadline=None)
@given(scenes())
def test_only_bg_b_zero_inside_box_unchanged_outside(scene):
    image, mask, box, _ = scene
    out = only_bg_b(image, mask, box)
    inside = box_region(*image.shape[:2], box)
    assert (out[inside] == 0).all()
    assert (out[~inside] == image[~inside]).all()


@settings(max_examples=150, deadline=None)
@given(scenes())
def test_only_bg_t_unchanged_outside_box_and_filled_from_the_strip(scene):
    image, mask, box, _ = scene
    out = only_bg_t(image, mask, box)
    inside = box_region(*image.shape[:2], box)
    assert (out[~inside] == image[~inside]).all()
    strip = background_strip(image, box)
    strip_colours = {tuple(p) for p in strip.reshape(-1, 3)}
    assert all(tuple(p) in strip_colours for p in out[inside])


def test_only_bg_t_picks_the_larger_strip_and_tiles_from_origin():
    h, w = 10, 20
    image = np.arange(h * w * 3, dtype=np.uint32).reshape(h, w, 3).astype(np.uint8)
    box = (4, 0, 20, 10)  # only a left margin of width 4: full-height strip
    out = only_bg_t(image, None, box)
    for x in range(4, 20):
        assert (out[:, x] == image[:, x % 4]).all()
    box = (0, 0, 20, 7)  # only a bottom margin of height 3: full-width strip below, tiled from (0,0)
    out = only_bg_t(image, None, box)
    for y in range(7):
        assert (out[y] == image[7 + (y % 3)]).all()


@settings(max_examples=150, deadline=None)
@given(scenes(), st.sampled_from(["mixed_same", "mixed_rand", "mixed_next"]))
def test_mixed_keeps_foreground_pixels_exactly(scene, name):
    image, mask, box, background = scene
    out = get_variant(name).render(image, mask, box, background)
    assert (out[mask] == image[mask]).all()
    assert (out[~mask] == background[~mask]).all()


@settings(max_examples=100, deadline=None)
@given(scenes())
def test_no_fg_and_only_fg_are_complements(scene):
    image, mask, box, _ = scene
    a = get_variant("no_fg").render(image, mask, box)
    b = get_variant("only_fg").render(image, mask, box)
    assert (a[mask] == 0).all() and (b[~mask] == 0).all()
    assert (a.astype(int) + b == image).all()


@given(st.integers(0, 8), st.integers(2, 20), st.integers(0, 1000))
def test_donor_class_rules(label, num_classes, seed):
    label = label % num_classes
    rng = np.random.default_rng(seed)
    assert get_variant("mixed_same").donor_class(label, num_classes, rng) == label
    assert get_variant("mixed_next").donor_class(label, num_classes, rng) == (label + 1) % num_classes
    assert 0 <= get_variant("mixed_rand").donor_class(label, num_classes, rng) < num_classes


def test_the_registry_lists_the_release_folders_in_their_order_then_bg_blurred():
    assert list_variants() == [*IN9_VARIANTS, "bg_blurred"]


@pytest.mark.parametrize("name", list_variants())
def test_every_registered_variant_keeps_shape_and_dtype(name):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (24, 30, 3), dtype=np.uint8)
    mask = np.zeros((24, 30), bool)
    mask[5:15, 8:20] = True
    out = get_variant(name).render(image, mask, (8, 5, 20, 15), rng.integers(0, 256, (24, 30, 3), dtype=np.uint8))
    assert out.shape == image.shape and out.dtype == np.uint8
    if name == "only_bg_t":
        # margins: left 8, right 10, top 5, bottom 9; 10 x 24 < 9 x 30, so the strip is the 9 full-width
        # rows below the box, tiled from (0, 0): canvas row y is strip row y % 9
        expected = image.copy()
        expected[5:15, 8:20] = image[15 + np.arange(5, 15) % 9, 8:20]
        assert np.array_equal(out, expected)
    else:
        assert (out[mask] == (0 if name in ("no_fg", "only_bg_b") else image[mask])).all()


def test_mixed_variant_without_background_is_an_error():
    with pytest.raises(ValueError):
        get_variant("mixed_rand").render(np.zeros((4, 4, 3), np.uint8), np.ones((4, 4), bool), (0, 0, 2, 2))
