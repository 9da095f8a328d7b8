"""Attribute masks through the pixel cache (`pixel_cache.AttributeMasks`): a probe's batches hold the
very masks that reading each image's files gives (the oracle: the attribute source itself, with the
cache off), a changed, removed or added file is read again, a corrupt one is one line naming it,
and a second run reads no attribute file."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from bgbench.data import attributes as attribute_files
from bgbench.data import cache_entries, pixel_cache
from bgbench.data.in9 import discover
from bgbench.data.resolve import resolve_layout
from bgbench.data.writer import write_attribute_masks
from bgbench.errors import DataError
from bgbench.evaluation.feed import masked_batches


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BGBENCH_CACHE", str(tmp_path / "cache"))


def _batches(root, monkeypatch, cached: bool, batch_size: int = 8):
    """Every batch of the root's originals, as plain tensors: (image ids, x, m, {name: (index, masks, have)})."""
    monkeypatch.setenv("BGBENCH_NO_CACHE", "0" if cached else "1")
    layout = resolve_layout(root, ["original"])
    out = []
    for _, (items, x, m, parts) in masked_batches(layout.foregrounds(), batch_size=batch_size, device="cpu",
                                                  attributes=layout.attribute_source, workers=1):
        out.append(([it.image_id for it in items], x.clone(), m.clone(),
                    {name: (index.clone(), masks.clone(), list(have)) for name, (index, masks, have) in parts.items()}))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for (ids_a, x_a, m_a, p_a), (ids_b, x_b, m_b, p_b) in zip(a, b):
        assert ids_a == ids_b and torch.equal(x_a, x_b) and torch.equal(m_a, m_b)
        assert p_a.keys() == p_b.keys()
        for name in p_a:
            assert torch.equal(p_a[name][0], p_b[name][0]) and torch.equal(p_a[name][1], p_b[name][1])
            assert p_a[name][2] == p_b[name][2] and p_a[name][1].dtype == torch.float32


def _attribute_entries():
    """The attribute entries of the cache, once every first pass of this process has renamed its
    entry into place (a pass marks its last images ready before its thread writes the index)."""
    pixel_cache._join_writers()
    return [e for e in cache_entries.entries() if "attributes" in (e.preprocessing or {})]


def test_cached_attribute_masks_are_the_files_masks_and_a_second_run_reads_no_file(synth_copy, monkeypatch):
    plain = _batches(synth_copy, monkeypatch, cached=False)
    assert sum(len(parts) for *_, parts in plain) > 0  # the tiny set has attributes to compare
    first = _batches(synth_copy, monkeypatch, cached=True)
    assert len(_attribute_entries()) == 1
    _same(plain, first)

    def refuse(*args, **kwargs):
        raise AssertionError("an attribute file was read")
    monkeypatch.setattr(attribute_files, "read_attribute_masks", refuse)
    _same(plain, _batches(synth_copy, monkeypatch, cached=True))


def _attributed(root):
    """(item, its .npz) of the first image with attribute masks."""
    layout = discover(root, variants=["original"])
    source = layout.attribute_source
    for item in layout.items("original"):
        if source.path(item.image_id).is_file():
            return item, source.path(item.image_id)
    raise AssertionError("no image with attributes")


def _touch_later(path):
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def test_a_changed_removed_or_added_attribute_file_is_read_again(synth_copy, monkeypatch):
    _batches(synth_copy, monkeypatch, cached=True)
    item, npz = _attributed(synth_copy)
    masks = attribute_files.read_attribute_masks(npz)
    name = sorted(masks)[0]
    masks[name] = np.ones_like(masks[name])  # the whole image is now that attribute
    write_attribute_masks(npz, masks)
    _touch_later(npz)
    changed = _batches(synth_copy, monkeypatch, cached=True)
    _same(_batches(synth_copy, monkeypatch, cached=False), changed)
    got = {ids[k]: parts[name][1][parts[name][2].index(k)] for ids, _, _, parts in changed
           for k in range(len(ids)) if name in parts and k in parts[name][2]}
    assert bool(got[item.image_id].all())

    saved = npz.read_bytes()
    npz.unlink()  # the image has no attribute now
    removed = _batches(synth_copy, monkeypatch, cached=True)
    _same(_batches(synth_copy, monkeypatch, cached=False), removed)
    assert all(item.image_id not in [ids[k] for k in have] for ids, _, _, parts in removed
               for _, _, have in parts.values())
    npz.write_bytes(saved)  # and has them again
    _same(_batches(synth_copy, monkeypatch, cached=False), _batches(synth_copy, monkeypatch, cached=True))
    assert len(_attribute_entries()) == 4


def _damage_a_member(npz):
    """Flip bytes inside the first member's compressed data, its zip directory left whole."""
    import zipfile
    with zipfile.ZipFile(npz) as z:
        info = z.infolist()[0]
    data = bytearray(npz.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for k in range(start + 2, start + min(info.compress_size, 40) - 2):
        data[k] ^= 0x5A
    npz.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["not a zip", "a member's data"])
def test_a_corrupt_attribute_file_is_one_line_naming_it(synth_copy, monkeypatch, damage):
    _, npz = _attributed(synth_copy)
    if damage == "not a zip":
        npz.write_bytes(b"not a zip")
    else:
        _damage_a_member(npz)
    _touch_later(npz)
    for cached in (True, False):
        with pytest.raises(DataError, match=str(npz)) as e:
            _batches(synth_copy, monkeypatch, cached=cached)
        assert "\n" not in str(e.value) and "run again" not in str(e.value)
    assert _attribute_entries() == []  # nothing half-written is kept


def test_rival10s_attribute_masks_are_the_same_through_the_cache(tmp_path, monkeypatch):
    """RIVAL10's masks are entries of a pickled dict beside each image (no mask files): its images
    take the per-image path, with their attributes from the cache's planes."""
    from helpers.rival10_tree import write_rival10
    root = write_rival10(tmp_path / "rival10")
    plain = _batches(root, monkeypatch, cached=False)
    assert sum(len(parts) for *_, parts in plain) > 0
    _same(plain, _batches(root, monkeypatch, cached=True))
    assert len(_attribute_entries()) == 1
    _same(plain, _batches(root, monkeypatch, cached=True))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20), st.integers(1, 6), st.integers(1, 7), st.integers(0, 2 ** 32 - 1))
def test_bit_planes_give_back_each_attributes_mask(count, h, w, seed):
    rng = np.random.default_rng(seed)
    names = [f"a{k}" for k in range(count)]
    masks = {n: rng.random((h, w)) > 0.6 for n in names if rng.random() > 0.3}
    masks = {n: m for n, m in masks.items() if m.any()}
    planes = attribute_files.packed_masks(masks, names, (h, w))
    assert planes.shape == (h, w, (count + 7) // 8) and planes.dtype == np.uint8
    present = attribute_files.present_attributes(planes[None], count)[0]
    assert [names[a] for a in np.flatnonzero(present)] == [n for n in names if n in masks]
    for a, n in enumerate(names):
        assert np.array_equal(attribute_files.unpacked_mask(planes, a), masks.get(n, np.zeros((h, w), bool)))
