"""The probes leave a card nothing to wait for: run on torch's meta device (`benchmarks/host_only.py`,
the CPU proxy of a GPU run), no probe reads a result back, or blocks on a copy up, once a batch;
and `Readback`, the way they read results, gives exactly the tensors' values."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bgbench.evaluation.feed import QUEUED, Readback
from bgbench.runs import run_measure

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import capacity_probes
        import host_only
        yield capacity_probes, host_only
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_a_readback_on_the_cpu_gives_the_tensors_values_and_bf16_as_float32_exactly():
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    got = Readback(f=x, b=x.bfloat16(), i=torch.arange(5), m=x > 0).get()
    assert np.array_equal(got["f"], x.numpy()) and got["f"].dtype == np.float32
    assert got["b"].dtype == np.float32 and np.array_equal(got["b"], x.bfloat16().float().numpy())
    assert got["i"].tolist() == list(range(5)) and got["m"].dtype == np.bool_
    assert np.array_equal(got["m"], x.numpy() > 0)


@pytest.mark.parametrize("name", ["noise", "saliency", "features", "ablate", "attribution"])
def test_no_probe_waits_on_the_device_once_a_batch(bench, name, synth_root, one_thread):
    capacity_probes, host_only = bench
    from bgbench.data.in9 import discover
    from bgbench.measures import registry as catalog
    from bgbench.measures.registry import get_measure
    catalog.load_all()
    cfg = next(c for n, c, *_ in capacity_probes._configs() if n == name)
    if name == "noise":
        cfg.levels, cfg.trials = [0.1, 0.2], 1
    cfg.batch_size = 4
    cfg.device = "meta"  # after the config's checks, which know real devices only
    images = len(discover(synth_root, variants=["original"]).foregrounds())
    batches = math.ceil(images / cfg.batch_size)
    model = capacity_probes.null_feature_model().to("meta")
    measure = get_measure(name)
    host = host_only.host_only_run(lambda: run_measure(measure, model, str(synth_root), cfg, progress=False),
                                   images, batches)
    assert "meta" not in QUEUED  # the proxy's stand-in is undone
    assert batches >= 8 and host["launches_per_image"] > 0
    # features checks its head once a run (four reads) and reads its weights once to rank; nothing
    # else waits, whatever the number of batches
    assert host["waits"] <= (5 if name == "features" else 0), host


def test_the_proxy_counts_a_read_back_and_a_blocking_copy_up_as_waits(bench):
    _, host_only = bench
    with host_only.HostOnly() as host:
        x = torch.ones(4, device="meta")
        (x * 2).cpu()
        float(x.sum())
        torch.as_tensor([1, 2]).to("meta")
        torch.as_tensor([1, 2]).to("meta", non_blocking=True)
    assert host.waits == 3 and host.ops >= 4


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_landing_gives_rows_in_batch_order_and_an_error_where_its_batch_comes_out(workers):
    import random
    import time

    from bgbench.measures.base import land_in_order
    random.seed(workers)

    def land(k):
        def rows():
            time.sleep(random.random() / 500)  # threads finish out of order
            if k == 7:
                raise ValueError("batch 7")
            return [k]
        return rows
    out = []

    def launched():
        for k in range(10):
            assert len(out) >= k - 1 - max(workers, 1)  # at most `workers` batches (one without threads) wait
            yield k, land(k)
    with pytest.raises(ValueError, match="batch 7"):
        for b, r in land_in_order(launched(), workers):
            out.append((b, r))
    assert out == [(k, [k]) for k in range(7)]


@pytest.mark.parametrize("name", ["noise", "saliency", "features", "ablate", "attribution"])
def test_rows_made_in_landing_threads_are_the_rows_made_in_turn(bench, name, synth_root, one_thread, monkeypatch):
    """On a GPU, results are queued to the host (`feed.QUEUED`) and rows are made in `--workers`
    threads. With the CPU counted as such a device, the copies are real and the threads run: the
    rows are those of a plain CPU run, in the same order."""
    capacity_probes, _ = bench
    from bgbench.evaluation import feed as transfer
    from bgbench.measures import registry as catalog
    from bgbench.measures.registry import get_measure
    catalog.load_all()
    measure = get_measure(name)
    model = capacity_probes.null_feature_model()
    rows = {}
    for queued in (False, True):
        cfg = next(c for n, c, *_ in capacity_probes._configs() if n == name)
        if name == "noise":
            cfg.levels, cfg.trials = [0.1, 0.2], 1
        cfg.batch_size, cfg.workers = 4, 3
        if queued:
            monkeypatch.setattr(transfer, "QUEUED", {"cuda", "cpu"})
            assert measure._landing_threads(cfg, "cpu") == 3
        rows[queued] = run_measure(measure, model, str(synth_root), cfg, progress=False).rows
    assert rows[True] == rows[False] and len(rows[False]) >= 5
