"""Decoding the next variant while the device computes this one (`eval.runner.decode_ahead`): each list's
pixels are what decoding gives, a bad list's error reaches the one who asks for it, the lists
after it decode in the caller, and an eval on an accelerator records what it decoded and what it
read from the cache as an eval in turn does."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgbench.data import pixel_cache
from bgbench.measures.eval.runner import DecodeAhead, decode_ahead
from bgbench.data.images import decode_item
from bgbench.data.in9 import discover
from bgbench.errors import DataError
from bgbench.runs import run_measure


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BGBENCH_CACHE", str(tmp_path / "cache"))


VARIANTS = ["original", "mixed_rand", "only_fg", "no_fg"]


def _lists(root):
    layout = discover(root, variants=VARIANTS)
    return [layout.items(v) for v in VARIANTS]


def test_each_list_is_what_decoding_gives_and_counts_as_decoded(synth_copy):
    lists = _lists(synth_copy)
    ahead = DecodeAhead(lists)
    for k, items in enumerate(lists):
        pixels = ahead.pixels(k)
        assert pixels.from_cache == 0, "decoded by this run, not read from the cache"
        for i in range(0, len(items), 5):
            assert np.array_equal(pixels.image(i), decode_item(items[i]))
    ahead.thread.join(timeout=60)
    assert not ahead.thread.is_alive()
    assert all(pixel_cache.pixels_of(items).from_cache == len(items) for items in lists)  # every entry whole


def test_a_bad_list_gives_its_error_to_its_asker_and_the_next_decode_in_the_caller(synth_copy):
    lists = _lists(synth_copy)
    lists[1][3].path.write_bytes(b"not an image")
    ahead = DecodeAhead(lists)
    assert np.array_equal(ahead.pixels(0).image(2), decode_item(lists[0][2]))
    with pytest.raises(DataError, match=str(lists[1][3].path)):
        pixels = ahead.pixels(1)
        for i in range(len(lists[1])):
            pixels.image(i)
    ahead.thread.join(timeout=60)
    assert ahead.futures[2].cancelled()  # never started in the background
    later = ahead.pixels(2)
    assert np.array_equal(later.image(0), decode_item(lists[2][0]))


def test_close_starts_no_further_pass(synth_copy):
    lists = _lists(synth_copy)
    ahead = DecodeAhead(lists)
    ahead.close()
    ahead.thread.join(timeout=60)
    started = [not f.cancelled() for f in ahead.futures]
    assert started[-1] is False or all(started)  # at most the pass under way when it closed went on
    assert np.array_equal(ahead.pixels(3).image(1), decode_item(lists[3][1]))


def test_only_an_accelerator_with_the_cache_on_decodes_ahead(synth_copy, monkeypatch):
    lists = _lists(synth_copy)
    assert decode_ahead(lists, "cpu") is None
    assert decode_ahead(lists[:1], "cuda:0") is None
    monkeypatch.setenv("BGBENCH_NO_CACHE", "1")
    assert decode_ahead(lists, "cuda:0") is None


def test_an_eval_on_an_accelerator_records_its_images_as_one_in_turn_does(synth_root, one_thread, monkeypatch):
    """On the meta device (a stand-in for a card: not the CPU, so the next variant is decoded
    ahead), the first eval decodes every image and the second reads every one from the cache; the
    predictions are those of the eval in turn (all class 0 on meta's zeros, so compared on the CPU)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import capacity_probes
        import host_only
    finally:
        sys.path.pop(0)
    import bgbench.measures.eval.runner as runner
    from bgbench.measures import registry as catalog
    from bgbench.measures.eval.config import EvalConfig
    from bgbench.measures.registry import get_measure
    catalog.load_all()
    made = []
    real = runner.decode_ahead
    monkeypatch.setattr(runner, "decode_ahead", lambda lists, device: made.append(device) or real(lists, device))
    measure = get_measure("eval")
    fed = []
    for _ in range(2):
        cfg = EvalConfig(variants=VARIANTS, batch_size=16)
        cfg.device = "meta"
        model = capacity_probes.null_feature_model().to("meta")
        got = {}
        host_only.host_only_run(lambda: got.update(report=run_measure(measure, model, str(synth_root), cfg,
                                                                          progress=False)), 1, 1)
        fed.append(got["report"].provenance.config["pixels"])
    assert made == ["meta", "meta"]
    total = sum(len(discover(synth_root, variants=VARIANTS).items(v)) for v in VARIANTS)
    assert fed == [{"images": total, "from_cache": 0}, {"images": total, "from_cache": total}]
