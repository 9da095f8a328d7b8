"""Training recipes (erm, mixup, cutmix, bgswap), SWA, fine-tuning and resumable runs."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from bgbench.data.synthetic import SYNTH_CLASSES
from bgbench.models import create_model
from bgbench.models.spec import IN9_MEAN, IN9_STD
from bgbench.training import TrainConfig, last_layer_recipes, list_recipes, train
from bgbench.training.augment import BgSwap, load_masks_and_backgrounds, swap_backgrounds
from bgbench.variants.functions import composite
from conftest import assert_one_line_error, run_cli

SRC = Path(__file__).resolve().parents[1] / "src"
ARCH = "timm:test_resnet"


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def _log(out: Path):
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_recipes_are_registered():
    assert list_recipes()[:4] == ["erm", "mixup", "cutmix", "bgswap"]


FULL_RECIPES = [r for r in list_recipes() if r not in last_layer_recipes()]  # dfr: tests/test_dfr.py


@pytest.mark.parametrize("recipe,swa", [*((r, False) for r in FULL_RECIPES), ("bgswap", True)])
def test_recipe_trains_and_checkpoint_loads(synth_root, tmp_path, recipe, swa):
    out = tmp_path / "run"
    args = ["train", "--data", synth_root, "--model", ARCH, "--recipe", recipe, "--epochs", 2 if swa else 1,
            "--batch-size", 16, "--out", out, "--quiet"] + (["--swa"] if swa else [])
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["recipe"] == recipe and cfg["swa"] is swa and cfg["data_fingerprint"]
    log = _log(out)
    assert [r["epoch"] for r in log] == ([1, 2] if swa else [1])
    if swa:
        assert [r["swa"] for r in log] == [False, True]  # swa_start 0.75 of 2 epochs -> averaging from epoch 2
    ckpt = torch.load(out / "model.pt", weights_only=True)
    assert ckpt["swa"] is swa
    # the spec round-trips: architecture, classes, normalization, input size
    model = create_model(f"file:{out / 'model.pt'}")
    assert model.spec.arch == "test_resnet" and model.spec.num_classes == 9
    assert model.spec.class_names == tuple(SYNTH_CLASSES)
    assert model.spec.mean == IN9_MEAN and model.spec.std == IN9_STD and model.spec.input_size == (3, 32, 32)
    # the checkpoint loads: the model holds exactly the saved (trained) weights
    loaded = model.net.state_dict()
    assert set(loaded) == set(ckpt["state_dict"])
    assert all(torch.equal(loaded[k], v) for k, v in ckpt["state_dict"].items())
    # and the accuracy `evaluate` reports is this model's on the val images, recomputed here by hand
    from bgbench.api import evaluate
    report = evaluate(model, synth_root, variants=["original"], progress=False)
    paths = sorted((synth_root / "original" / "val").glob("*/*.png"))
    x = torch.stack([torch.from_numpy(np.asarray(Image.open(p).convert("RGB"))) for p in paths])
    labels = np.array([SYNTH_CLASSES.index(p.parent.name) for p in paths])
    with torch.inference_mode():
        preds = model.eval()(x.permute(0, 3, 1, 2).float() / 255).argmax(1).numpy()
    ids = [f"{p.parent.name}/{p.stem}" for p in paths]
    assert sorted(report.predictions["original"].image_ids) == ids
    assert report.accuracy["original"].value == pytest.approx(float(np.mean(preds == labels)))


def test_swap_backgrounds_keeps_foreground_exactly_and_the_label():
    g = torch.Generator().manual_seed(1)
    n, h, w = 40, 8, 10
    images = torch.randint(0, 256, (n, h, w, 3), dtype=torch.uint8, generator=g)
    backgrounds = torch.randint(0, 256, (n, h, w, 3), dtype=torch.uint8, generator=g)
    masks = torch.rand(n, h, w, generator=g) < 0.4
    labels = torch.arange(n) % 4
    aug = BgSwap(masks, backgrounds, labels, num_classes=4, p=1.0, generator=g)
    idx = torch.arange(0, n, 3)
    x = images[idx].permute(0, 3, 1, 2).float() / 255
    out, y = aug(x, labels[idx], idx)
    assert torch.equal(y, labels[idx])
    m = masks[idx][:, None].expand_as(x)
    assert torch.equal(out[m], x[m])  # foreground pixels bit for bit
    bgs = backgrounds.permute(0, 3, 1, 2).float() / 255
    for row, i in enumerate(idx):  # every other pixel comes from one donor's background
        donors = [d for d in range(n) if torch.equal(out[row][~m[row]], bgs[d][~m[row]])]
        assert donors
        # same as the numpy composite of variants.functions
        ref = composite(images[i].numpy(), masks[i].numpy(), backgrounds[donors[0]].numpy())
        assert np.array_equal((out[row] * 255).round().byte().permute(1, 2, 0).numpy(), ref)
    # p=0 leaves the batch alone
    aug0 = BgSwap(masks, backgrounds, labels, num_classes=4, p=0.0, generator=g)
    assert torch.equal(aug0(x, labels[idx], idx)[0], x)
    assert torch.equal(swap_backgrounds(x, masks[idx], torch.zeros_like(x), torch.zeros(len(idx), dtype=torch.bool)),
                       x)


def test_bgswap_donor_class_is_uniform_over_classes():
    labels = torch.tensor([0] * 90 + [1] * 10)  # unbalanced: donors must still be 50/50 by class
    z = torch.zeros(100, 2, 2, dtype=torch.bool)
    aug = BgSwap(z, torch.zeros(100, 2, 2, 3, dtype=torch.uint8), labels, num_classes=2,
                 generator=torch.Generator().manual_seed(0))
    donors = aug.donors(20000)
    share = float((labels[donors] == 1).float().mean())
    assert 0.47 < share < 0.53
    within = torch.bincount(donors[labels[donors] == 1] - 90, minlength=10).float()
    assert within.min() > 0.7 * within.mean()  # uniform within the class too


def test_backgrounds_from_folder_match_those_computed_from_masks(synth_copy):
    from bgbench.data.in9 import discover
    layout = discover(synth_copy, split="train", variants=["original"])
    items = layout.items("original")
    masks, from_folder = load_masks_and_backgrounds(synth_copy, "train", items, (32, 32))
    shutil.rmtree(synth_copy / "only_bg_t" / "train")
    masks2, computed = load_masks_and_backgrounds(synth_copy, "train", items, (32, 32))
    assert torch.equal(masks, masks2) and torch.equal(from_folder, computed)


def test_missing_train_masks_give_one_clear_line(synth_copy, tmp_path):
    shutil.rmtree(synth_copy / "fg_mask" / "train")
    proc = run_cli("train", "--data", synth_copy, "--model", ARCH, "--recipe", "bgswap", "--epochs", 1,
                   "--out", tmp_path / "run", "--quiet")
    assert_one_line_error(proc, str(synth_copy / "fg_mask" / "train"), "bgbench synth")
    assert not (tmp_path / "run" / "model.pt").exists()


def test_one_missing_mask_is_named(synth_copy, tmp_path):
    victim = sorted((synth_copy / "fg_mask" / "train" / SYNTH_CLASSES[3]).iterdir())[0]
    victim.unlink()
    proc = run_cli("train", "--data", synth_copy, "--model", ARCH, "--recipe", "bgswap", "--epochs", 1,
                   "--out", tmp_path / "run", "--quiet")
    assert_one_line_error(proc, str(victim))


def test_resume_after_kill_continues_from_the_saved_epoch(synth_root, tmp_path):
    out = tmp_path / "run"
    args = ["train", "--data", str(synth_root), "--model", ARCH, "--recipe", "bgswap", "--swa", "--epochs", "3",
            "--batch-size", "2", "--threads", "1", "--out", str(out), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-m", "bgbench", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 120
    log = out / "log.jsonl"
    try:
        while time.time() < deadline and proc.poll() is None:
            if log.is_file() and log.read_text().count("\n") >= 1:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    done_before = len(_log(out))
    assert 1 <= done_before < 3 and not (out / "model.pt").exists()  # really killed mid-run
    # the same command again (in this process: same `main`, without another interpreter start-up)
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert f"resuming {out} from epoch {done_before}/3" in again.stderr
    assert [r["epoch"] for r in _log(out)] == [1, 2, 3]  # continued, not restarted
    assert [r["swa"] for r in _log(out)] == [False, False, True]
    model = create_model(f"file:{out / 'model.pt'}")
    assert model.spec.num_classes == 9 and model.spec.class_names == tuple(SYNTH_CLASSES)
    # the resumed run ends where an uninterrupted one does (weights, optimizer and RNG states restored)
    ref = train(TrainConfig(data=str(synth_root), model=ARCH, recipe="bgswap", swa=True, epochs=3, batch_size=2,
                            out=str(tmp_path / "ref")), progress=False)
    a = torch.load(out / "model.pt", weights_only=True)["state_dict"]
    b = torch.load(ref, weights_only=True)["state_dict"]
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=1e-5), k


def test_resume_refuses_a_changed_config(synth_root, tmp_path):
    out = tmp_path / "run"
    base = ["train", "--data", synth_root, "--model", ARCH, "--epochs", 1, "--batch-size", 32, "--out", out, "--quiet"]
    assert run_cli(*base).returncode == 0
    proc = run_cli(*base, "--lr", "0.01")
    assert_one_line_error(proc, "different configuration", "lr")
    proc = run_cli(*base)  # the same command again: already complete, nothing to train
    assert proc.returncode == 0 and "already finished (epoch 1/1)" in proc.stderr
    assert [r["epoch"] for r in _log(out)] == [1]


def test_finetune_from_a_1000_class_checkpoint_with_frozen_backbone(synth_root, tmp_path):
    import timm
    src = timm.create_model("test_resnet", num_classes=1000)
    init = tmp_path / "in1k.pt"
    torch.save(src.state_dict(), init)
    out = tmp_path / "ft"
    proc = run_cli("train", "--data", synth_root, "--model", ARCH, "--init", init, "--freeze", "--epochs", 1,
                   "--batch-size", 32, "--out", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    model = create_model(f"file:{out / 'model.pt'}")
    assert model.spec.num_classes == 9 and model.spec.class_names == tuple(SYNTH_CLASSES)
    # the backbone's own normalization is kept (timm's config for a 1000-class model), not IN-9's
    assert model.spec.mean == create_model(ARCH, checkpoint=str(init)).spec.mean != IN9_MEAN
    clf = model.net.pretrained_cfg["classifier"]
    before = dict(src.named_parameters())
    for k, p in model.net.named_parameters():
        if not k.startswith(clf + "."):
            assert torch.equal(p, before[k]), k  # the backbone is frozen
    assert model.net.get_classifier().weight.shape[0] == 9
