"""The diffusion backend of `bgbench edit`: guided-diffusion weights loaded into diffusers, and the
blended guided diffusion checked against an oracle of ImageNet-E's toolkit
(tests/helpers/guided_diffusion.py) on a tiny ADM of random weights, the same seed and noise."""
import sys

import pytest
import torch

from helpers import guided_diffusion as O

pytest.importorskip("diffusers")

HEADS = 16  # the tiny ADM's head width: two heads at 32 channels, four at 64, so the qkv split is tested


@pytest.fixture(scope="module")
def adm():
    return O.random_adm(0)


@pytest.fixture(scope="module")
def adm_file(adm, tmp_path_factory):
    path = tmp_path_factory.mktemp("adm") / "tiny_diffusion_uncond.pt"
    torch.save(adm.state_dict(), path)
    return path


def _scene(seed, size=32, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    start = torch.rand(1, 3, size, size, generator=g, dtype=dtype) * 2 - 1
    keep = torch.rand(1, 3, size, size, generator=g, dtype=dtype) * 2 - 1
    mask = torch.ones(1, 1, size, size, dtype=dtype)
    mask[..., size // 4:size * 2 // 3, size // 3:size * 3 // 4] = 0  # the object, kept
    return start, keep, mask


def _load(path, **kw):
    from bgbench.edits.diffusion_weights import load_weights
    return load_weights(path, head_channels=HEADS, **kw)


# ---------------------------------------------------------------------------------------------
# weights

@pytest.mark.parametrize("fmt", ["pt", "safetensors", "folder"])
def test_a_guided_diffusion_state_dict_gives_the_same_network_in_diffusers(adm, adm_file, fmt, tmp_path):
    path = adm_file
    if fmt == "safetensors":
        from safetensors.torch import save_file
        path = tmp_path / "tiny.safetensors"
        save_file({k: v.contiguous() for k, v in adm.state_dict().items()}, str(path))
    elif fmt == "folder":
        _load(adm_file).unet.save_pretrained(str(tmp_path / "tiny_unet"))
        path = tmp_path / "tiny_unet"
    w = _load(path)
    assert w.kind == ("diffusers" if fmt == "folder" else "guided-diffusion") and len(w.sha256) == 64
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    t = torch.tensor([999.0, 17.0])
    with torch.no_grad():
        want = adm.double()(x, t)
        got = w.unet.double()(x, t).sample
    adm.float()
    assert want.abs().max() > 0.5  # a random network: the comparison is not of two zeros
    assert torch.allclose(got, want, atol=1e-10, rtol=0)


def _one_line(excinfo, *needles):
    msg = str(excinfo.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, msg


def test_bad_weights_are_one_line_errors(adm, tmp_path):
    from bgbench.errors import CheckpointError
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError) as e:
        _load(junk)
    _one_line(e, "junk.pt", "cannot read")
    other = tmp_path / "resnet.pt"
    torch.save({"conv1.weight": torch.zeros(8, 3, 3, 3), "fc.weight": torch.zeros(2, 8)}, other)
    with pytest.raises(CheckpointError) as e:
        _load(other)
    _one_line(e, "not a guided-diffusion UNet")
    fixed = O.random_adm(0, out_channels=3)  # no learned variance
    path = tmp_path / "fixed_sigma.pt"
    torch.save(fixed.state_dict(), path)
    with pytest.raises(CheckpointError) as e:
        _load(path)
    _one_line(e, "learned variance")
    sd = adm.state_dict()
    sd["middle_block.0.in_layers.2.weight"] = torch.zeros(64, 64, 5, 5)  # a tensor of the wrong shape
    bad = tmp_path / "mismatch.pt"
    torch.save(sd, bad)
    with pytest.raises(CheckpointError) as e:
        _load(bad)
    _one_line(e, "does not fit")
    with pytest.raises(CheckpointError) as e:
        _load(adm_file_missing := tmp_path / "nowhere.pt")
    _one_line(e, str(adm_file_missing), "no such file")
    with pytest.raises(CheckpointError) as e:
        _load(tmp_path)  # a folder without a diffusers config
    _one_line(e, "config.json")


def test_heads_that_do_not_divide_the_channels_are_refused(adm_file):
    from bgbench.edits.diffusion_weights import load_weights
    from bgbench.errors import CheckpointError
    with pytest.raises(CheckpointError) as e:
        load_weights(adm_file, head_channels=24)
    _one_line(e, "heads of 24")


@pytest.fixture
def unreachable_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants as constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    return constants


def test_an_offline_hub_name_is_one_line_at_once(unreachable_hub):
    import time
    from bgbench.errors import CheckpointError
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError) as e:
        _load("openai/diffusers-not-cached")
    assert time.perf_counter() - t0 < 5
    _one_line(e, "openai/diffusers-not-cached", "HF_HUB_OFFLINE is set")


def test_without_diffusers_the_backend_is_one_line_naming_the_extra(adm_file, monkeypatch):
    from bgbench.errors import BgbenchError
    monkeypatch.setitem(sys.modules, "diffusers", None)  # `import diffusers` raises ImportError
    with pytest.raises(BgbenchError) as e:
        _load(adm_file)
    _one_line(e, "diffusers", "bgbench[diffusion]")


# ---------------------------------------------------------------------------------------------
# the sampler against the toolkit's loop

CASES = [  # (lambda, hard, coarse_to_fine, respacing, skip, range_lambda, size)
    (20.0, True, False, "100", 96, 50.0, 32),  # the toolkit's level lambda = 20 as run.sh runs it
    # lambda = -20, coarse-to-fine: from step 54 down (its kernels act above steps 50 and 35), at 8 px to be quick
    (-20.0, True, True, "100", 45, 50.0, 8),
    (20.0, False, False, "100", 96, 0.0, 32),  # without --hard the sign flips
    (5.0, True, False, "25,15", 36, 50.0, 32),  # two sections: the guidance's x0 at the toolkit's unscaled index
]


@pytest.mark.parametrize("lam,hard,ctf,respacing,skip,rng,size", CASES)
def test_the_sampler_is_the_toolkits_loop(adm, adm_file, lam, hard, ctf, respacing, skip, rng, size, one_thread):
    from bgbench.edits.diffusion import Guidance, blended_diffusion
    from bgbench.edits.schedule import Schedule
    start, keep, mask = _scene(3, size)
    net = O.random_adm(0).double()
    want = O.edit(net, start, keep, mask, seed=5, lam=lam, hard=hard, coarse_to_fine=ctf, respacing=respacing,
                  skip=skip, range_lambda=rng)
    unet = _load(adm_file).unet.double()
    got = blended_diffusion(unet, Schedule(respacing), start, keep, mask,
                            Guidance(complexity=lam, hard=hard, range_lambda=rng, coarse_to_fine=ctf),
                            [torch.Generator().manual_seed(5)], skip)
    assert torch.allclose(got, want, atol=1e-10, rtol=0), (got - want).abs().max()
    assert torch.equal(got[0][:, mask[0, 0] == 0], keep[0][:, mask[0, 0] == 0])  # the paste-back


def test_the_blended_region_is_the_toolkits_at_every_step():
    from bgbench.edits.diffusion import _region
    mask = torch.ones(1, 1, 96, 96, dtype=torch.float64)
    mask[..., 30:60, 40:50] = 0
    for t in (80, 51, 50, 36, 35, 0):
        for ctf in (False, True):
            want = O.blend_region(mask, t, ctf)
            assert torch.equal(_region(mask, t, ctf), want)
    assert not torch.equal(O.blend_region(mask, 51, True), O.blend_region(mask, 50, True))  # 51 px, then 31 px


def test_guidance_moves_the_result_and_float32_agrees_with_the_oracle(adm, adm_file, one_thread):
    from bgbench.edits.diffusion import Guidance, blended_diffusion
    from bgbench.edits.schedule import Schedule
    start, keep, mask = _scene(4, 32, torch.float32)
    unet = _load(adm_file).unet.float()
    runs = {}
    for lam in (0.0, 20.0):
        runs[lam] = blended_diffusion(unet, Schedule("100"), start, keep, mask, Guidance(complexity=lam),
                                      [torch.Generator().manual_seed(7)], 96)
    assert (runs[20.0] - runs[0.0]).abs().max() > 1e-3  # the guidance is not a no-op
    want = O.edit(O.random_adm(0).float(), start, keep, mask, seed=7, lam=20.0, skip=96)
    assert torch.allclose(runs[20.0], want, atol=1e-4, rtol=0)


def test_a_batch_gives_what_one_image_at_a_time_gives(adm_file, one_thread):
    from bgbench.edits.diffusion import Guidance, blended_diffusion
    from bgbench.edits.schedule import Schedule
    unet = _load(adm_file).unet.double()
    scenes = [_scene(s) for s in (1, 2)]
    g = Guidance(complexity=20.0)
    alone = [blended_diffusion(unet, Schedule("100"), *sc, g, [torch.Generator().manual_seed(10 + k)], 97)
             for k, sc in enumerate(scenes)]
    both = blended_diffusion(unet, Schedule("100"), *(torch.cat(parts) for parts in zip(*scenes)), g,
                             [torch.Generator().manual_seed(10), torch.Generator().manual_seed(11)], 97)
    assert torch.allclose(both, torch.cat(alone), atol=1e-10, rtol=0)


# ---------------------------------------------------------------------------------------------
# bgbench edit --backend diffusion

@pytest.fixture(scope="module")
def small_synth(tmp_path_factory):
    """Synthetic-9 with one 32 px image per class: the diffusion levels run in seconds on it."""
    from bgbench.variants.synth import write_dataset
    root = tmp_path_factory.mktemp("synth9_small")
    write_dataset(root, per_class=1, size=32, seed=1, split="val", progress=False)
    return root


def _manifest(out):
    import csv
    with open(out / "manifest.csv", newline="") as f:
        return list(csv.DictReader(f))


def _edit(data, out, weights, *more):
    from conftest import run_cli
    return run_cli("edit", "--data", data, "--out", out, "--backend", "diffusion", "--weights", weights,
                   "--head-channels", HEADS, "--diffusion-size", 32, *more)


def test_edit_with_the_diffusion_backend_writes_what_eval_reads(small_synth, adm_file, tmp_path, one_thread):
    """Complexity levels and Algorithm 2 (size, position, rotation: the classical composite, its
    background regenerated): the object's pixels are the classical edit's, bit for bit, the
    background is new, and every row names the backend, lambda, steps, skip, seed and weights."""
    import json
    import numpy as np
    from PIL import Image
    from bgbench.models.checkpoint import sha256_file
    from conftest import run_cli
    out, classical = tmp_path / "edits", tmp_path / "classical"
    levels = ["complexity_*", "remove", "size_0.1", "position_*", "rotation_*"]
    proc = _edit(small_synth, out, adm_file, "--levels", *levels, "--angles", 90, "--skip", 98, "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("edit", "--data", small_synth, "--out", classical, "--levels", *levels[2:], "--angles", 90,
                   "--quiet")
    assert proc.returncode == 0, proc.stderr
    rows = _manifest(out)
    written = {r["folder"] for r in rows}
    assert written == {"original", "remove", "complexity_-20", "complexity_20", "size_0.1", "position_random",
                       "rotation_90"}
    reference = {(r["folder"], r["image"]): json.loads(r["params"]) for r in _manifest(classical)}
    sha = sha256_file(adm_file)
    changed = 0
    for r in rows:
        params = json.loads(r["params"])
        if r["folder"] in ("original", "remove"):
            assert "backend" not in params
            continue
        lam = float(r["folder"][11:]) if r["folder"].startswith("complexity") else 0.0
        assert params["backend"] == "diffusion" and params["weights_sha256"] == sha
        assert (params["lambda"], params["steps"], params["skip"], params["seed"]) == (lam, 2, 98, 0)
        ref = reference.get((r["folder"], r["image"]), {})
        assert params.get("matrix") == ref.get("matrix")  # the same classical move, scale or rotation
        a = np.asarray(Image.open(out / r["folder"] / "val" / f"{r['image']}.png"))
        o = np.asarray(Image.open(out / "original" / "val" / f"{r['image']}.png"))
        m = np.load(out / "fg_mask" / "val" / f"{r['image']}.npy").astype(bool)
        if r["folder"].startswith("complexity"):
            assert np.array_equal(a[m], o[m])  # the paste-back of the object
        else:  # the classical composite's object, bit for bit; around it, a regenerated background
            same = np.all(a == np.asarray(Image.open(classical / r["folder"] / "val" / f"{r['image']}.png")), axis=-1)
            assert float(r["fg_fraction"]) * 0.98 <= same.mean() <= float(r["fg_fraction"]) + 0.05
        changed += not np.array_equal(a[~m], o[~m])
    assert changed >= 0.9 * sum(1 for r in rows if "backend" in json.loads(r["params"]))
    ev = run_cli("eval", "--model", "timm:test_resnet", "--data", out, "--json", "--quiet")
    assert ev.returncode == 0, ev.stderr
    from bgbench.store import Store
    with Store() as store:
        run = store.runs("eval")[-1]
        assert {r["variant"] for r in store.predictions(run["id"])} == written


def test_the_diffusion_edits_do_not_depend_on_the_batch_size(small_synth, adm_file, tmp_path, one_thread):
    outs = []
    for batch in (1, 4):
        out = tmp_path / f"b{batch}"
        proc = _edit(small_synth, out, adm_file, "--levels", "complexity_20", "size_0.1", "--skip", 98,
                     "--batch-size", batch, "--quiet")
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    pngs = sorted(outs[0].glob("[cs]*/val/*/*.png"))
    assert len(pngs) >= 12
    for png in pngs:
        assert png.read_bytes() == (outs[1] / png.relative_to(outs[0])).read_bytes()


@pytest.mark.parametrize("args, needles", [
    (["--backend", "diffusion"], ["--backend diffusion needs --weights"]),
    (["--weights", "x.pt"], ["--weights", "--backend diffusion"]),
    (["--backend", "diffusion", "--weights", "{junk}"], ["junk.pt", "cannot read"]),
    (["--backend", "diffusion", "--weights", "{adm}", "--skip", "100"], ["--skip 100"]),
    (["--backend", "diffusion", "--weights", "{adm}", "--respacing", "ten"], ["--respacing"]),
])
def test_bad_diffusion_options_are_one_line_errors(synth_root, adm_file, tmp_path, args, needles):
    from conftest import assert_one_line_error, run_cli
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00" * 64)
    args = [a.format(junk=junk, adm=adm_file) for a in args]
    proc = run_cli("edit", "--data", synth_root, "--out", tmp_path / "o", "--levels", "complexity_20", *args)
    assert_one_line_error(proc, *needles)


@pytest.mark.parametrize("package, more", [("diffusers", []), ("lpips", ["--lpips-lambda", "1000"])])
def test_the_cli_without_diffusers_or_lpips_is_one_line_naming_the_extra(synth_root, adm_file, tmp_path, monkeypatch,
                                                                          package, more):
    from conftest import assert_one_line_error, run_cli
    monkeypatch.setitem(sys.modules, package, None)  # `import PACKAGE` raises ImportError
    proc = run_cli("edit", "--data", synth_root, "--out", tmp_path / "o", "--backend", "diffusion",
                   "--weights", adm_file, "--head-channels", HEADS, "--levels", "complexity_20", *more)
    assert_one_line_error(proc, package, "pip install 'bgbench[diffusion]'")
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_the_lambda_order_of_glcm_contrast_holds_on_the_tiny_models_edits(small_synth, adm_file, tmp_path,
                                                                           one_thread):
    """lambda = -20 gives a lower GLCM contrast than lambda = 20, image by image (the classical
    backend's order, original between the two, is test_edits.py's
    test_complexity_levels_order_glcm_contrast). A random network's x0 is noise, far rougher than
    any Synthetic-9 background, so the original does not lie between the levels here, and over
    many steps its noise drowns the guidance: the run takes 3 of 10 respaced steps, where the
    variance that scales the guided mean is large and the guidance dominates. Both levels of an
    image draw the same noise (one seed per image, as the toolkit's one seed), so their difference
    is the guidance's."""
    import json
    import numpy as np
    out = tmp_path / "edits"
    proc = _edit(small_synth, out, adm_file, "--levels", "complexity_*", "--respacing", 10, "--skip", 7, "--quiet",
                 "--json")
    assert proc.returncode == 0, proc.stderr
    contrast = {}
    for r in _manifest(out):
        contrast.setdefault(r["folder"], {})[r["image"]] = json.loads(r["params"])["glcm_contrast"]
    low, high = contrast["complexity_-20"], contrast["complexity_20"]
    assert set(low) == set(high) and len(low) == 9
    assert all(high[i] > low[i] for i in low), (low, high)
    means = {m["level"]: m["glcm_contrast"] for m in json.loads(proc.stdout)["levels"]}
    assert means["complexity_-20"] < means["complexity_20"]


def test_the_released_models_layout_maps_key_for_key_and_shape_for_shape():
    """256x256_diffusion_uncond.pt's architecture (image_editor.py's model_config), built without
    memory on the meta device: every tensor of its state dict lands on a diffusers tensor of the
    same shape, and none is left over on either side."""
    from diffusers import UNet2DModel
    from bgbench.edits.diffusion_weights import adm_config, adm_to_diffusers
    with torch.device("meta"):
        released = O.ADM(model_channels=256, channel_mult=(1, 1, 2, 2, 4, 4), num_res_blocks=2,
                         attention_resolutions=(8, 16, 32), head_channels=64)
        sd = released.state_dict()
        config = adm_config(sd, 64, "256x256_diffusion_uncond.pt")
        mapped = adm_to_diffusers(sd, config)
        target = UNet2DModel(**config).state_dict()
    assert sum(v.numel() for v in sd.values()) == 552_814_086
    assert config["block_out_channels"] == (256, 256, 512, 512, 1024, 1024) and config["layers_per_block"] == 2
    assert config["down_block_types"] == ("ResnetDownsampleBlock2D",) * 3 + ("AttnDownBlock2D",) * 3
    assert set(mapped) == set(target)
    assert all(tuple(mapped[k].shape) == tuple(target[k].shape) for k in target)


def test_classifier_guidance_is_the_toolkits_class_guided(adm_file, one_thread):
    """The adversarial level's guidance: class_guided's gradient in x0's space, added to the
    loss's, against the oracle with the same tiny classifier; it lowers the true class's
    probability of the result."""
    from bgbench.edits.diffusion import Guidance, blended_diffusion
    from bgbench.edits.schedule import Schedule
    torch.manual_seed(2)
    classifier = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2), torch.nn.Flatten(),
                                     torch.nn.LazyLinear(5)).double()
    start, keep, mask = _scene(6)
    classifier(start)  # materialises the lazy layer
    y = torch.tensor([3])
    net = O.random_adm(0).double()
    want = O.edit(net, start, keep, mask, seed=9, lam=0.0, skip=96, classifier=classifier, y=y, classifier_scale=10.0)
    unet = _load(adm_file).unet.double()

    def log_p_true(x0):
        return torch.log_softmax(classifier(x0), dim=-1)[:, 3]

    runs = {}
    for scale in (0.0, 10.0):
        runs[scale] = blended_diffusion(unet, Schedule("100"), start, keep, mask,
                                        Guidance(classifier_scale=scale), [torch.Generator().manual_seed(9)], 96,
                                        classifier=log_p_true)
    assert torch.allclose(runs[10.0], want, atol=1e-10, rtol=0)
    with torch.no_grad():
        assert log_p_true(runs[10.0]) < log_p_true(runs[0.0])


def test_the_adversarial_level_is_made_by_classifier_guidance(small_synth, adm_file, tmp_path, one_thread):
    import json
    import numpy as np
    from PIL import Image
    out = tmp_path / "adv"
    proc = _edit(small_synth, out, adm_file, "--levels", "complexity_adv", "--model", "timm:test_resnet",
                 "--skip", 98, "--quiet")
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in _manifest(out) if r["folder"] == "complexity_adv"]
    assert len(rows) == 9
    for r in rows:
        params = json.loads(r["params"])
        assert params["backend"] == "diffusion" and params["model"] == "timm:test_resnet"
        assert params["classifier_scale"] == 10.0 and params["lambda"] == 0.0 and "eps" not in params  # not PGD
        a = np.asarray(Image.open(out / "complexity_adv" / "val" / f"{r['image']}.png"))
        o = np.asarray(Image.open(out / "original" / "val" / f"{r['image']}.png"))
        m = np.load(out / "fg_mask" / "val" / f"{r['image']}.npy").astype(bool)
        assert np.array_equal(a[m], o[m])


def test_diffusion_shards_merge_to_the_unsharded_bytes(small_synth, adm_file, tmp_path, one_thread):
    from conftest import run_cli

    def files(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    more = ["--levels", "complexity_20", "size_0.1", "--skip", 99, "--batch-size", 2, "--seed", 4, "--quiet"]
    assert _edit(small_synth, tmp_path / "whole", adm_file, *more).returncode == 0
    shards = [tmp_path / f"s{k}" for k in range(2)]
    for k, d in enumerate(shards):
        proc = _edit(small_synth, d, adm_file, *more, "--shard", f"{k}/2")
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("merge", tmp_path / "merged", *shards, "--quiet")
    assert proc.returncode == 0, proc.stderr
    whole, merged = files(tmp_path / "whole"), files(tmp_path / "merged")
    assert sorted(whole) == sorted(merged) and sum(k.startswith("complexity_20/") for k in whole) == 9
    assert all(merged[k] == v for k, v in whole.items())


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here: --device cuda is valid")
def test_a_device_this_machine_lacks_is_one_line(small_synth, adm_file, tmp_path):
    from conftest import assert_one_line_error
    proc = _edit(small_synth, tmp_path / "o", adm_file, "--levels", "complexity_20", "--device", "cuda")
    assert_one_line_error(proc, "--device cuda", "CUDA is not available")


@pytest.mark.parametrize("sub", ["", "unet"])
def test_a_cached_hub_name_loads_offline(adm, adm_file, tmp_path, monkeypatch, sub):
    """A diffusers repository in the hub cache (a UNet at its root, or a pipeline's unet/), named
    OWNER/NAME, loads with HF_HUB_OFFLINE set: nothing downloads."""
    from helpers.hub_cache import REVISION, use_offline_hub
    repo = tmp_path / "hf" / "hub" / "models--someone--tiny-adm"
    snapshot = repo / "snapshots" / REVISION
    _load(adm_file).unet.save_pretrained(str(snapshot / sub) if sub else str(snapshot))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(REVISION)
    use_offline_hub(monkeypatch, tmp_path / "hf")
    w = _load("someone/tiny-adm")
    assert w.kind == "diffusers" and w.sample_size == 256
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.allclose(w.unet(x, torch.tensor([10.0])).sample, adm(x, torch.tensor([10.0])), atol=1e-4)


def test_a_diffusion_size_other_than_the_images_is_resized_there_and_back(small_synth, adm_file, tmp_path,
                                                                          one_thread):
    """The toolkit edits at the model's size; bgbench resizes there (here 16 px for 32 px images) and
    back, then pastes the object from the source: the level keeps the dataset's size and the object."""
    import numpy as np
    from PIL import Image
    from conftest import run_cli
    out = tmp_path / "o"
    proc = run_cli("edit", "--data", small_synth, "--out", out, "--backend", "diffusion", "--weights", adm_file,
                   "--head-channels", HEADS, "--diffusion-size", 16, "--levels", "complexity_20", "--skip", 99,
                   "--quiet")
    assert proc.returncode == 0, proc.stderr
    for r in _manifest(out):
        a = np.asarray(Image.open(out / r["folder"] / "val" / f"{r['image']}.png"))
        o = np.asarray(Image.open(out / "original" / "val" / f"{r['image']}.png"))
        m = np.load(out / "fg_mask" / "val" / f"{r['image']}.npy").astype(bool)
        assert a.shape == o.shape == (32, 32, 3) and np.array_equal(a[m], o[m])


def test_the_background_preservation_terms_are_the_toolkits(adm_file, one_thread):
    """L2 and LPIPS (lpips' VGG with random backbone weights, offline) on the edited region of
    x0 * fac + x * (1 - fac), against the oracle."""
    lpips = pytest.importorskip("lpips")
    from bgbench.edits.diffusion import Guidance, blended_diffusion
    from bgbench.edits.schedule import Schedule
    torch.manual_seed(0)
    metric = lpips.LPIPS(net="vgg", pnet_rand=True, verbose=False).double().eval()
    start, keep, mask = _scene(8)
    want = O.edit(O.random_adm(0).double(), start, keep, mask, seed=3, lam=20.0, skip=97, l2_lambda=10000.0,
                  lpips_lambda=1000.0, lpips_model=metric)
    got = blended_diffusion(_load(adm_file).unet.double(), Schedule("100"), start, keep, mask,
                            Guidance(complexity=20.0, l2_lambda=10000.0, lpips_lambda=1000.0),
                            [torch.Generator().manual_seed(3)], 97, lpips_model=metric)
    plain = blended_diffusion(_load(adm_file).unet.double(), Schedule("100"), start, keep, mask,
                              Guidance(complexity=20.0), [torch.Generator().manual_seed(3)], 97)
    assert torch.allclose(got, want, atol=1e-9, rtol=0)
    assert (got - plain).abs().max() > 1e-3  # the terms act
