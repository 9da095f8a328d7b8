"""The forward options (--channels-last, --compile) and the decoding threads (--workers): faster, and
the same fp32 verdicts and predictions as the plain eager model, on a tiny model and generated data."""
from __future__ import annotations

import copy
import time

import pytest
import torch

from bgbench.models import create_model
from bgbench.models.options import speed_up
from bgbench.options import default_workers
from conftest import run_cli


class _Item:
    def __init__(self, k):
        self.k, self.image_id, self.path, self.label = k, f"img{k}", f"img{k}.png", 0


def _render(item):
    """Image k is filled with k; images 3 and 7 take longer, so a worker finishing early could overtake."""
    import numpy as np
    time.sleep(0.03 * (item.k in (3, 7)))
    if item.k == 11:
        from bgbench.errors import DataError
        raise DataError(f"{item.path}: cannot decode (truncated file)")
    return np.full((4, 4, 3), item.k, np.uint8)


def test_the_feed_keeps_order_with_worker_processes_and_cuts_batches_by_size():
    from bgbench.data.pixel_cache import Pixels
    from bgbench.evaluation.feed import Images, batches
    items = [_Item(k) for k in range(10)]
    seen = [(k, [it.k for it in b.items], (b.x[:, 0, 0, 0] * 255).round().int().tolist())
            for k, b in batches(Images.of(Pixels(items), 3, render=_render), device="cpu", workers=2)]
    assert [s[0] for s in seen] == [0, 1, 2, 3]
    assert [s[1] for s in seen] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert all(ids == values for _, ids, values in seen)  # each batch holds its own images' pixels


def test_a_bad_image_in_a_worker_process_is_its_own_one_line_error():
    from bgbench.data.pixel_cache import Pixels
    from bgbench.errors import DataError
    from bgbench.evaluation.feed import Images, batches
    items = [_Item(k) for k in range(14)]
    out = batches(Images.of(Pixels(items), 4, render=_render), device="cpu", workers=2)
    assert [k for k, _ in (next(out), next(out))] == [0, 1]
    with pytest.raises(DataError) as raised:
        next(out)
    assert str(raised.value) == "img11.png: cannot decode (truncated file)"  # not the worker's traceback


def test_default_workers_follow_the_device(monkeypatch):
    assert default_workers("cpu") == 1
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert default_workers("cuda") == 8
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # four torchrun processes on the machine share its cores
    assert default_workers("cuda:1") == 4


@pytest.fixture(scope="module")
def plain_and_fast(model_ckpt):
    """A trained test_resnet eager, and a copy channels-last and compiled."""
    plain = create_model(f"file:{model_ckpt}").eval()
    fast = speed_up(copy.deepcopy(plain), channels_last=True, compile=True)
    return plain, fast


def test_speedups_keep_the_weights_and_record_themselves(plain_and_fast):
    plain, fast = plain_and_fast
    assert fast.speedups == ["channels_last", "compile"] and plain.speedups == []
    assert list(fast.state_dict()) == list(plain.state_dict())  # the compiled graph adds no keys
    conv = next(m for m in fast.net.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)


def test_fp32_challenge_verdicts_are_identical(plain_and_fast, synth_root, tmp_path, one_thread):
    import bgbench
    from bgbench.store import Store
    plain, fast = plain_and_fast
    rows = {}
    for name, model in (("plain", plain), ("fast", fast)):
        with Store(tmp_path / f"{name}.db") as store:
            report = bgbench.challenge(model, synth_root, store, batch_size=16, progress=False)
            rows[name] = [tuple(r) for r in store.challenge_results(report.run_id)]
    # the engine's search through each model (every composite's argmax: the test below, so --full's
    # matrix and its ASR follow)
    assert rows["plain"] == rows["fast"]


def test_fp32_argmax_of_every_composite_is_identical(plain_and_fast, synth_root, one_thread):
    """Stronger than the verdicts (functions of these argmaxes): every foreground on every background."""
    import numpy as np
    from bgbench.data.images import decode_image, read_mask
    from bgbench.data.in9 import discover
    plain, fast = plain_and_fast
    layout = discover(synth_root, variants=["original", "only_bg_t"])
    pairs = layout.foregrounds()
    fg = torch.from_numpy(np.stack([decode_image(it.path) for it, _ in pairs])).permute(0, 3, 1, 2).float() / 255
    mask = torch.from_numpy(np.stack([read_mask(m) for _, m in pairs])).float()[:, None]
    bg = torch.from_numpy(np.stack([decode_image(it.path) for it in layout.items("only_bg_t")]))
    bg = bg.permute(0, 3, 1, 2).float() / 255
    with torch.inference_mode():
        for k in range(len(pairs)):
            x = fg[k:k + 1] * mask[k:k + 1] + bg * (1 - mask[k:k + 1])
            a, b = plain(x), fast(x)
            assert torch.equal(a.argmax(1), b.argmax(1)), pairs[k][0].image_id
            assert (a - b).abs().max() < 1e-4
    with torch.inference_mode():
        assert len(set(plain(bg).argmax(1).tolist())) >= 3  # varied predictions: the check can fail


def test_fp32_predictions_are_identical_and_gradcam_runs_eager(plain_and_fast, synth_root, one_thread):
    import bgbench
    from bgbench.probing.gradcam import gradcam_batch, resolve_layer
    plain, fast = plain_and_fast
    a = bgbench.evaluate(plain, synth_root, variants=["original", "mixed_rand"], progress=False)
    b = bgbench.evaluate(fast, synth_root, variants=["original", "mixed_rand"], progress=False, workers=3)
    for v in ("original", "mixed_rand"):
        pa, pb = a.predictions[v], b.predictions[v]
        assert pa.image_ids == pb.image_ids and (pa.preds == pb.preds).all()
        assert abs(pa.conf - pb.conf).max() < 1e-5
    assert b.provenance.config["speedups"] == ["channels_last", "compile"]
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    maps_a, target_a = gradcam_batch(plain, resolve_layer(plain, None)[1], x)
    with torch.enable_grad():
        fast(x)  # a graph compiled for this very call, before Grad-CAM hooks its layer
    maps_b, target_b = gradcam_batch(fast, resolve_layer(fast, None)[1], x)  # its layer hook must fire
    assert torch.equal(target_a, target_b) and abs(maps_a - maps_b).max() < 1e-4


def test_cli_flags_reach_the_run(synth_root):
    res = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--channels-last", "--workers", "2",
                  "--variants", "original", "--quiet", "--json")
    assert res.returncode == 0, res.stderr
    bad = run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root, "--workers", "0")
    assert bad.returncode == 2 and "--workers must be at least 1" in bad.stderr
