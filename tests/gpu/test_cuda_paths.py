"""The CUDA smoke test (issue 37): every model command on tiny generated data, on a GPU.

`pytest -m gpu tests/gpu` (benchmarks/gpu/run.sh runs it first). Where CUDA is absent the whole
module is skipped, in one line. `BGBENCH_GPU_TESTS_DEVICE=cpu` runs the same checks on the CPU
(gloo for NCCL, fp16 left out), to try them without a GPU.

Data and model: the suite's tiny Synthetic-9 (`synth_root`, 32 px) and the test_resnet trained on
it on the CPU (`model_ckpt`), so the GPU runs use the CPU's weights and can be held to the CPU's
fp32 results. That model is fooled by some background on every foreground, so the challenge runs
on a copy whose every other foreground mask covers the whole image (`half_plain`): those
foregrounds are fooled exactly when their image is misclassified, and the verdicts go both ways.
Facts a reader of the run wants (disagreements, losses) are recorded with `record_property`, which
run.sh copies into its JSON.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import run_cli
from bgbench.runs import run_measure

DEVICE = os.environ.get("BGBENCH_GPU_TESTS_DEVICE", "cuda")
pytestmark = pytest.mark.gpu
if DEVICE.startswith("cuda") and not torch.cuda.is_available():
    pytest.skip("needs CUDA (torch.cuda.is_available() is False)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
NCCL_SMOKE = ROOT / "tests" / "helpers" / "nccl_smoke.py"
#: eval's fp32 is strict (TF32 off), so the device predicts what the CPU does; channels-last and
#: compiled forwards use other convolution algorithms (other roundings, as any algorithm's), and bf16 is
#: autocast, so a near tie may decide otherwise: at most this share of predictions may differ.
EVAL_DISAGREEMENT = 0.03


def _ok(res):
    """A CLI result that must have succeeded; its stdout parsed as JSON."""
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def _predictions(db: Path, run_id: int) -> dict:
    """(variant, image id) -> predicted class of one eval run, read from its store."""
    from bgbench.store import Store
    with Store(db) as store:
        return {(r["variant"], r["image_id"]): r["pred"] for r in store.predictions(run_id)}


def _challenge_rows(db: Path, run_id: int) -> dict:
    """The stored rows of one challenge run: per foreground (its clean prediction, verdict, pairs,
    fooling background and prediction) and, for a --full run, per background (its ASR)."""
    from bgbench.store import Store
    with Store(db) as store:
        return {"fg": {r["image_id"]: tuple(r)[1:] for r in store.challenge_results(run_id)},
                "bg": [tuple(r) for r in store.challenge_backgrounds(run_id)]}


def _verdicts(rows: dict) -> dict:
    """image id -> fooled."""
    return {k: bool(r[3]) for k, r in rows["fg"].items()}


def _eval(ckpt: Path, data: Path, db: Path, device: str, *flags) -> dict:
    out = _ok(run_cli("eval", "--model", f"file:{ckpt}", "--data", data, "--device", device, "--quiet", "--json",
                      "--db", db, *flags))
    return _predictions(db, out["run_id"])


def _challenge(ckpt: Path, data: Path, db: Path, device: str, precision: str, *flags) -> dict:
    out = _ok(run_cli("challenge", "--model", f"file:{ckpt}", "--data", data, "--device", device, "--precision",
                      precision, "--batch-size", 16, "--quiet", "--json", "--db", db, *flags))
    return _challenge_rows(db, out["run_id"])


@pytest.fixture(scope="module")
def half_plain(synth_root, tmp_path_factory) -> Path:
    """A copy of the tiny dataset whose every other foreground mask is all ones."""
    import shutil

    import numpy as np
    root = tmp_path_factory.mktemp("half-plain") / "data"
    shutil.copytree(synth_root, root)
    for path in sorted((root / "fg_mask").rglob("*.npy"))[::2]:
        mask = np.load(path)
        np.save(path, np.ones_like(mask))
    return root


@pytest.fixture(scope="module")
def cpu_fp32(model_ckpt, synth_root, half_plain, tmp_path_factory) -> dict:
    """The CPU's fp32 eval predictions (every variant) and full challenge rows of the trained model."""
    db = tmp_path_factory.mktemp("cpu") / "cpu.db"
    return {"eval": _eval(model_ckpt, synth_root, db, "cpu"),
            "challenge": _challenge(model_ckpt, half_plain, db, "cpu", "fp32", "--full")}


@pytest.mark.parametrize("flags", [[], ["--channels-last"], ["--compile"], ["--precision", "tf32"],
                                   ["--precision", "bf16"]],
                         ids=["fp32", "channels-last", "compile", "tf32", "bf16"])
def test_eval_on_the_device_agrees_with_the_cpu(flags, model_ckpt, synth_root, cpu_fp32, tmp_path, record_property):
    if "tf32" in flags and not DEVICE.startswith("cuda"):
        pytest.skip("tf32 needs a GPU")
    preds = _eval(model_ckpt, synth_root, tmp_path / "r.db", DEVICE, *flags)
    want = cpu_fp32["eval"]
    assert preds.keys() == want.keys()
    differ = sum(preds[k] != want[k] for k in want)
    record_property("predictions_differing_from_cpu_fp32", f"{differ} of {len(want)}")
    allowed = 0 if not flags else EVAL_DISAGREEMENT * len(want)  # plain fp32 is exact: the CPU's predictions
    assert differ <= allowed, f"{differ} of {len(want)} predictions differ from the CPU's"


def test_fp32_challenge_predicts_every_composite_as_the_cpu(model_ckpt, half_plain, cpu_fp32, tmp_path):
    """fp32 is exact on CUDA (TF32 off): a --full run, every foreground on every background, gives
    the CPU's rows (clean predictions, verdicts, fooling backgrounds) and backgrounds' ASR."""
    got = _challenge(model_ckpt, half_plain, tmp_path / "r.db", DEVICE, "fp32", "--full")
    want = cpu_fp32["challenge"]
    verdicts = _verdicts(want)
    assert 0 < sum(verdicts.values()) < len(verdicts)  # verdicts go both ways: the check can fail
    assert got["fg"] == want["fg"], sorted(k for k in want["fg"] if got["fg"].get(k) != want["fg"][k])
    assert got["bg"] == want["bg"] and len(want["bg"]) == len(verdicts)


def test_bf16_verified_verdicts_equal_the_cpus_fp32(model_ckpt, half_plain, cpu_fp32, tmp_path):
    """bf16-verified on the device: fooled verdicts are confirmed in fp32 and survivors audited;
    on these weights every verdict is the CPU's fp32 one."""
    got = _verdicts(_challenge(model_ckpt, half_plain, tmp_path / "r.db", DEVICE, "bf16-verified"))
    want = _verdicts(cpu_fp32["challenge"])
    assert got == want, sorted(k for k in want if got.get(k) != want[k])


@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp16"])
def test_plain_autocast_challenge_runs(precision, model_ckpt, half_plain, cpu_fp32, tmp_path, record_property):
    """TF32, plain bf16 and fp16 are not exact: they run, and how many verdicts they change is recorded."""
    if precision in ("tf32", "fp16") and not DEVICE.startswith("cuda"):
        pytest.skip(f"{precision} needs a GPU")
    got = _verdicts(_challenge(model_ckpt, half_plain, tmp_path / "r.db", DEVICE, precision))
    want = _verdicts(cpu_fp32["challenge"])
    assert got.keys() == want.keys()
    record_property("verdicts_differing_from_cpu_fp32", f"{sum(got[k] != want[k] for k in want)} of {len(want)}")


PROBES = {"noise": ["--levels", "0.2", "0.5", "--trials", "1"], "saliency": ["--examples", "0"],
          "ablate": [], "features": ["--galleries", "0"], "attribution": []}


@pytest.mark.parametrize("probe", list(PROBES))
def test_each_probe_runs_on_the_device(probe, model_ckpt, synth_root, tmp_path):
    out = _ok(run_cli("probe", probe, "--model", f"file:{model_ckpt}", "--data", synth_root, "--device", DEVICE,
                      "--quiet", "--json", "--db", tmp_path / "r.db", *PROBES[probe]))
    assert out["run_id"] >= 1


def test_the_card_draws_the_noise_numpy_draws_bit_for_bit(model_ckpt, synth_root, tmp_path):
    """The noise probe draws on the device (int32 arithmetic and a table lookup): every value is
    numpy's, to the bit, so the report's redrawn copies are the card's; and the probe's rows on the
    device are the CPU's wherever the strict fp32 forward predicts alike (all but near ties)."""
    import numpy as np

    from bgbench.measures.noise import MEASURE as NOISE
    from bgbench.measures.noise.draws import image_noise
    from bgbench.measures.noise.engine import device_draws, device_keys
    from bgbench.store import Store
    seeds = [0, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 62 + 12345, 2 ** 63 - 1]
    made = device_draws(device_keys(seeds, torch.device(DEVICE)), 3, 224, 224).cpu().numpy()
    assert np.array_equal(made, np.stack([image_noise(s, 3, 224, 224) for s in seeds], axis=1))
    rows = {}
    for device in ("cpu", DEVICE):
        out = _ok(run_cli("probe", "noise", "--model", f"file:{model_ckpt}", "--data", synth_root, "--device", device,
                          "--levels", "0.2", "0.5", "--trials", "2", "--quiet", "--json", "--db", tmp_path / "r.db"))
        with Store(tmp_path / "r.db") as store:
            rows[device] = {(r.image_id, r.region, r.level, r.trial): r.pred
                            for r in NOISE.stored_rows(store, out["run_id"])}
    same = sum(rows["cpu"][k] == rows[DEVICE][k] for k in rows["cpu"])
    assert rows["cpu"].keys() == rows[DEVICE].keys() and same >= 0.97 * len(rows["cpu"])


def test_grad_cam_on_the_device_measures_what_the_cpu_does(tmp_path, record_property):
    """Grad-CAM's hooks on a device model: RIVAL10's alignment measures, averaged over the images,
    within 0.02 of the CPU's (TF32 convolutions move the maps a little, not the measures). At 96 px
    test_resnet's last maps are 3 x 3 (at 32 px, 1 x 1: every map flat), and its seeded random init
    is the same on both devices."""
    from bgbench.variants.synth import write_dataset
    data = tmp_path / "s96"
    write_dataset(data, per_class=2, size=96, seed=0, split="val", progress=False)
    runs = {}
    for device in ("cpu", DEVICE):
        runs[device] = _ok(run_cli("probe", "saliency", "--model", "timm:test_resnet", "--data", data,
                                   "--device", device, "--examples", "0", "--quiet", "--json",
                                   "--db", tmp_path / f"{device}.db"))
    assert runs["cpu"]["flat_maps"] < runs["cpu"]["images"]  # maps to compare: the check can fail
    assert runs[DEVICE]["flat_maps"] == runs["cpu"]["flat_maps"]
    for name in ("precision", "iou", "dice", "ap", "density_diff"):
        a, b = runs["cpu"]["image_mean"][name]["value"], runs[DEVICE]["image_mean"][name]["value"]
        record_property(f"saliency_{name}", f"cpu {a:.4f}, {DEVICE} {b:.4f}")
        assert abs(a - b) <= 0.02, (name, a, b)


def test_training_erm_and_bgswap_then_dfr_on_the_device(synth_root, tmp_path):
    for recipe in ("erm", "bgswap"):
        out = _ok(run_cli("train", "--data", synth_root, "--model", "timm:test_resnet", "--recipe", recipe,
                          "--epochs", 1, "--batch-size", 16, "--device", DEVICE, "--out", tmp_path / recipe,
                          "--quiet", "--json", "--db", tmp_path / "r.db"))
        assert out["recipe"] == recipe and (tmp_path / recipe / "model.pt").is_file()
    _ok(run_cli("train", "--data", synth_root, "--recipe", "dfr", "--model", f"file:{tmp_path / 'erm' / 'model.pt'}",
                "--device", DEVICE, "--out", tmp_path / "dfr", "--retrains", 2, "--feature-cache", "none",
                "--quiet", "--json", "--db", tmp_path / "r.db"))
    assert (tmp_path / "dfr" / "model.pt").is_file()


def test_a_study_step_on_the_device(model_ckpt, synth_root, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(f'models = ["file:{model_ckpt}"]\ndatasets = ["{synth_root}"]\n[measures.eval]\n')
    out = _ok(run_cli("study", study, "--device", DEVICE, "--out", tmp_path / "report", "--quiet", "--json",
                      "--db", tmp_path / "r.db"))
    assert out["ran"] == 1


def _torchrun(*args) -> subprocess.CompletedProcess:
    """One process under `torchrun --standalone`, as a user launches it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
                           *map(str, args)], env=env, capture_output=True, text=True, timeout=300)


def test_torchrun_one_process_eval_and_nccl(model_ckpt, synth_root, tmp_path):
    """bgbench joins a process group only for two processes or more (one GPU here), so the launch
    is checked through bgbench and NCCL itself through the collectives bgbench calls, on the GPU."""
    proc = _torchrun("-m", "bgbench", "eval", "--model", f"file:{model_ckpt}", "--data", synth_root, "--device",
                     DEVICE, "--variants", "original", "--quiet", "--db", tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _torchrun(NCCL_SMOKE, DEVICE)
    assert proc.returncode == 0 and "collectives ok" in proc.stdout, proc.stderr[-3000:]


def test_the_device_feed_delivers_what_the_cpu_conversion_gives(synth_root):
    """Pinned buffers reused across batches, copies on a side stream: every batch arrives as the
    plain conversion makes it, in order, none overwritten by a later one."""
    import numpy as np

    from bgbench.evaluation.feed import DeviceFeed, to_tensor
    rng = np.random.default_rng(0)
    batches = [(k, rng.integers(0, 256, (5 + k % 3, 32, 32, 3), dtype=np.uint8)) for k in range(9)]
    got = [(tag, x.cpu()) for tag, x in DeviceFeed(DEVICE, depth=2)(iter(batches))]
    assert [tag for tag, _ in got] == list(range(9))
    for (_, batch), (_, x) in zip(batches, got):
        assert torch.equal(x, to_tensor(batch, "cpu"))


@pytest.mark.parametrize("precision", ["fp32", "bf16-verified"])
def test_the_challenge_search_never_makes_the_host_wait_for_the_whole_device(precision):
    """Under CUDA's sync debug mode set to 'error', every call that synchronises the device or a
    stream (`.cpu()`, `.item()`, a boolean mask as an index, a copy from pageable memory) raises:
    the search's only waits are on the events of results that are due (`feed.Fetch`), while
    the next batch is already queued. Its verdicts are the CPU's."""
    if not DEVICE.startswith("cuda"):
        pytest.skip("CUDA's sync debug mode needs a GPU")
    from torch import nn
    from bgbench.measures.challenge.engine import ChallengeEngine
    from bgbench.models.spec import BgModel, ModelSpec
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    model = BgModel(net, ModelSpec(name="toy:conv", arch="toy", num_classes=4, mean=(0, 0, 0), std=(1, 1, 1))).eval()
    fg = torch.randint(0, 256, (24, 12, 12, 3), dtype=torch.uint8, generator=g)
    masks = torch.rand(24, 12, 12, generator=g) < 0.6
    bg = torch.randint(0, 256, (40, 12, 12, 3), dtype=torch.uint8, generator=g)
    labels, bg_labels = (torch.arange(24) % 4).numpy(), torch.arange(40) % 4
    runs = {}
    for device in ("cpu", DEVICE):
        engine = ChallengeEngine(model.to(device), bg.to(device), bg_labels, batch_size=8, precision=precision)
        if engine.verifier is not None:  # calibration measures on the host, once a run
            engine.verifier.calibrate(fg.to(device), masks.to(device), range(24))
        if device != "cpu":
            torch.cuda.set_sync_debug_mode("error")
        try:
            results = engine.verdicts(fg, masks, labels, range(24), progress=False)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        runs[device] = sorted((r.index, r.fooled) for r in results)
    assert runs[DEVICE] == runs["cpu"]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_feed_under_a_real_forward_gives_the_plain_paths_outputs(precision, tmp_path):
    """The ring's buffers are reused while forwards are queued on the compute stream: memory handed
    to one stream and written by another corrupted activations once (NaNs in bf16 on an H100).
    Many batches through `predict_items` must give exactly the outputs of the same forwards fed
    plainly, batch by batch."""
    import numpy as np
    from PIL import Image

    from bgbench.data.in9 import discover
    from bgbench.evaluation.feed import to_tensor
    from bgbench.evaluation.numerics import forward_context
    from bgbench.evaluation.predict import predict_items
    from bgbench.models import create_model
    rng = np.random.default_rng(0)
    for i in range(40 * 16):
        folder = tmp_path / "data" / "original" / "val" / f"{i % 4:02d}_c"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(folder / f"{i:04d}.png")
    items = discover(tmp_path / "data").items("original")
    torch.manual_seed(0)
    model = create_model("timm:resnet18", num_classes=4).eval().to(DEVICE)
    got = predict_items(model, items, batch_size=16, device=DEVICE, progress=False, precision=precision)
    want = []
    with torch.inference_mode(), forward_context(precision, DEVICE):
        for i in range(0, len(items), 16):
            from bgbench.data.images import decode_item
            x = to_tensor(np.stack([decode_item(it) for it in items[i:i + 16]]), DEVICE)
            want.append(model(x).float().softmax(dim=1).max(dim=1).values.cpu())
    assert np.array_equal(got.conf, torch.cat(want).double().numpy())


@pytest.mark.parametrize("probe", ["noise", "saliency", "features", "ablate", "attribution"])
def test_no_probe_makes_the_host_wait_for_the_device_once_a_batch(probe, model_ckpt, synth_root, record_property):
    """Under CUDA's sync debug mode set to 'warn', every call that synchronises the device warns:
    a probe run in 9 batches warns no more than the same run in one, since each batch's results come
    back through `feed.Readback` (an event, waited on once the next batch is queued) and its
    labels, attribute masks and noise go up pinned (`tests/test_host_work.py` counts the same on
    the meta device, without a GPU)."""
    if not DEVICE.startswith("cuda"):
        pytest.skip("CUDA's sync debug mode needs a GPU")
    import warnings

    from bgbench.measures import registry as catalog
    from bgbench.measures.registry import get_measure
    from bgbench.models import create_model
    catalog.load_all()
    measure = get_measure(probe)
    options = {"noise": {"levels": [0.1, 0.2], "trials": 1}, "saliency": {"examples": 0},
               "features": {"galleries": 0}}.get(probe, {})
    model = create_model(f"file:{model_ckpt}").to(DEVICE)
    warned = {}
    for batch_size in (36, 4):
        cfg = measure.config(batch_size=batch_size, device=DEVICE, **options)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                assert run_measure(measure, model, str(synth_root), cfg, progress=False).rows
            finally:
                torch.cuda.set_sync_debug_mode("default")
        warned[batch_size] = sum("synchroniz" in str(w.message) for w in caught)
    record_property(f"{probe}_syncs", f"1 batch: {warned[36]}, 9 batches: {warned[4]}")
    assert warned[4] <= warned[36], warned
