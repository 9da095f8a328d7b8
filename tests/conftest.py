import subprocess
import sys
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


#: The suite's longest files (minutes on 2 cores): collected first, so that pytest-xdist starts them
#: while the short tests fill the other worker, instead of one of them starting last and running alone.
LONG_FIRST = ("test_readme.py", "test_cluster.py", "test_report_scale.py", "test_report.py", "test_scale_out.py",
              "test_speed_options.py", "test_model_files.py", "test_challenge.py", "test_registries.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the order within a file stays
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: use --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def _session_pixel_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pixel-cache")


@pytest.fixture(autouse=True)
def _private_store(tmp_path_factory, monkeypatch, _session_pixel_cache):
    """Every test records into its own results store, never into ~/.bgbench, and caches decoded
    pixels in this session's folder, never in ~/.cache/bgbench."""
    monkeypatch.setenv("BGBENCH_DB", str(tmp_path_factory.mktemp("store") / "results.db"))
    monkeypatch.setenv("BGBENCH_CACHE", str(_session_pixel_cache))
    monkeypatch.delenv("BGBENCH_NO_CACHE", raising=False)


@pytest.fixture
def one_thread():
    """One torch thread: tiny models gain nothing from a second intra-op thread but wake-ups (several
    times slower on a shared 2-core machine), and torchrun gives each process one (OMP_NUM_THREADS=1),
    so a one-process run compared with it must sum floats in the same order."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory) -> Path:
    """A tiny Synthetic-9 (val and train) shared by the tests; never modified."""
    from bgbench.variants.synth import write_dataset
    root = tmp_path_factory.mktemp("synth9")
    write_dataset(root, per_class=4, size=32, seed=0, split="val", progress=False)
    write_dataset(root, per_class=6, size=32, seed=0, split="train", progress=False)
    return root


@pytest.fixture(scope="session")
def model_ckpt(synth_root, tmp_path_factory) -> Path:
    """timm:test_resnet trained 3 epochs on the tiny dataset's ORIGINAL: a checkpoint whose challenge
    verdicts go both ways (shared by the challenge and speed-option tests)."""
    from bgbench.training import TrainConfig, train
    out = tmp_path_factory.mktemp("model")
    return train(TrainConfig(data=str(synth_root), variant="original", model="timm:test_resnet", out=str(out),
                             epochs=3, batch_size=16), progress=False)


@pytest.fixture
def synth_copy(synth_root, tmp_path) -> Path:
    """A private copy of the tiny dataset that a test may damage."""
    import shutil
    dst = tmp_path / "data"
    shutil.copytree(synth_root, dst)
    return dst


def assert_one_line_error(proc, *needles):
    """A user error: exit status 2, exactly one `bgbench: error:` line naming each needle, no traceback."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("bgbench: error:")]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def run_cli_subprocess(*args, cwd=None, env=None):
    """Run `python -m bgbench ARGS` in a fresh interpreter; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "bgbench", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def run_cli(*args):
    """Run the CLI's `main` in this process (same code path as the console script, minus ~10 s
    of interpreter start-up per call); returns returncode, stdout and stderr."""
    import contextlib
    import io
    import types

    from bgbench.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse errors
            code = e.code
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def mask_boxes(root, split: str = "val") -> dict:
    """image id -> (x0, y0, x1, y1), end-exclusive, worked out here from the fg_mask files alone
    (Synthetic-9's box is its mask's bounding box), independently of bgbench's box readers."""
    import numpy as np
    out = {}
    folder = Path(root) / "fg_mask" / split
    for path in sorted(folder.rglob("*.npy")):
        ys, xs = np.nonzero(np.load(path))
        out[path.relative_to(folder).with_suffix("").as_posix()] = (int(xs.min()), int(ys.min()),
                                                                    int(xs.max()) + 1, int(ys.max()) + 1)
    return out
