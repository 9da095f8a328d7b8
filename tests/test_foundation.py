"""Foundation models through their schemes: openclip: (a zero-shot head built from text) and hf:
(a Hugging Face classifier with its processor's preprocessing). Tiny models are built and saved
here (`helpers/foundation_models.py`), never downloaded; the oracles are CLIP's ImageNet evaluation and
the transformers forward pass, composed by hand in the tests."""
import hashlib
import json
import shutil
import sqlite3

import numpy as np
import open_clip
import pytest
import torch
import torch.nn.functional as F

from bgbench.models.options import create_model  # the scheme step under load_model: classes= given
from bgbench.classes import IN9_FOLDERS
from bgbench.errors import BgbenchError, CheckpointError
from bgbench.models.checkpoint import save_checkpoint
from bgbench.models.inputs import fit_to_native
from bgbench.runs import run_measure
from conftest import assert_one_line_error, run_cli
from helpers.foundation_models import CLIP_CFG, CLIP_MEAN, CLIP_STD, tiny_clip, tiny_vit
from helpers.saliency_oracle import synth64  # noqa: F401 (fixture: 9 images at 64 px)

SUPERCLASSES = ["dog", "bird", "wheeled vehicle", "reptile", "carnivore", "insect", "musical instrument", "primate",
                "fish"]


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    return tiny_clip(tmp_path_factory.mktemp("clip") / "tiny")


@pytest.fixture(scope="module")
def vit_dir(tmp_path_factory):
    return tiny_vit(tmp_path_factory.mktemp("vit") / "tiny", image_size=16)


def _images(n=3, size=32, seed=0):
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _normalized(x, mean, std):
    return (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)


# ---------------------------------------------------------------------------------------------- openclip:


def test_zero_shot_logits_are_clips_imagenet_evaluation_written_here(clip_dir):
    model = create_model(f"openclip:{clip_dir}", labels="dataset", classes=IN9_FOLDERS)
    clip = open_clip.create_model(f"local-dir:{clip_dir}").eval()
    tokenizer = open_clip.get_tokenizer(f"local-dir:{clip_dir}")
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES
    x = _images()
    with torch.no_grad():
        rows = []
        for name in SUPERCLASSES:  # each prompt normalized, averaged over the templates, normalized again
            e = clip.encode_text(tokenizer([t(name) for t in OPENAI_IMAGENET_TEMPLATES]))
            mean = (e / e.norm(dim=-1, keepdim=True)).mean(dim=0)
            rows.append(mean / mean.norm())
        f = clip.encode_image(_normalized(x, CLIP_MEAN, CLIP_STD))
        expected = 37.0 * (f / f.norm(dim=-1, keepdim=True)) @ torch.stack(rows).T
        got = model(x)
    assert torch.allclose(got, expected, atol=1e-4), (got - expected).abs().max()
    spec, zs = model.spec, model.spec.extra["zero_shot"]
    assert zs["class_names"] == SUPERCLASSES and zs["label_set"] == "dataset" and zs["templates"] == "openai"
    assert len(zs["template_texts"]) == 80
    assert zs["template_texts"][0] == "a bad photo of a {}." and zs["template_texts"][-1] == "a tattoo of the {}."
    assert zs["logit_scale"] == pytest.approx(37.0) and zs["logit_bias"] is None
    assert spec.mean == pytest.approx(CLIP_MEAN) and spec.std == pytest.approx(CLIP_STD)
    assert spec.input_size == (3, 32, 32) and spec.resize == "native" and spec.interpolation == "bicubic"
    assert (spec.label_space, spec.num_classes, spec.class_names) == ("dataset", 9, IN9_FOLDERS)
    assert spec.extra["model_cfg"] == CLIP_CFG and spec.checkpoint == str(clip_dir)


def test_the_label_set_follows_the_data_unless_named(clip_dir, tmp_path):
    synth = ("00_circle", "01_square", "02_triangle")
    on_synth = create_model(f"openclip:{clip_dir}", classes=synth, templates="simple")
    assert on_synth.spec.extra["zero_shot"]["class_names"] == ["circle", "square", "triangle"]
    assert on_synth.spec.label_space == "dataset" and on_synth.spec.num_classes == 3
    (tmp_path / "t.txt").write_text("a photo of a {}.\n\n")
    on_in9 = create_model(f"openclip:{clip_dir}", classes=IN9_FOLDERS, templates=str(tmp_path / "t.txt"))
    zs = on_in9.spec.extra["zero_shot"]
    assert (on_in9.spec.label_space, on_in9.spec.num_classes, zs["label_set"]) == ("imagenet1k", 1000, "imagenet")
    assert zs["class_names"][:2] == ["tench", "goldfish"] and zs["class_names"][999] == "toilet paper"
    assert zs["template_texts"] == ["a photo of a {}."]
    assert on_in9(_images(1)).shape == (1, 1000)


def test_a_weights_file_after_the_at_sign_loads_the_same_model(clip_dir, tmp_path):
    (tmp_path / "bgbench-tiny-clip.json").write_text(json.dumps(CLIP_CFG))
    open_clip.add_model_config(tmp_path / "bgbench-tiny-clip.json")
    folder = create_model(f"openclip:{clip_dir}", labels="dataset", classes=IN9_FOLDERS, templates="simple")
    weights = clip_dir / "open_clip_pytorch_model.bin"
    named = create_model(f"openclip:bgbench-tiny-clip@{weights}", labels="dataset", classes=IN9_FOLDERS,
                         templates="simple")
    x = _images()
    with torch.no_grad():
        assert torch.allclose(folder(x), named(x), atol=1e-6)
    assert named.spec.checkpoint == str(weights) and named.spec.checkpoint_sha256 == folder.spec.checkpoint_sha256
    random = create_model("openclip:bgbench-tiny-clip", labels="dataset", classes=IN9_FOLDERS, templates="simple")
    assert random.spec.extra["init_seed"] == 0 and random.spec.checkpoint_sha256 != folder.spec.checkpoint_sha256



def test_a_folder_with_a_config_and_no_weights_is_a_seeded_random_init(clip_dir, tmp_path):
    """open_clip initialises such a folder's model at random (with a warning): bgbench seeds it and says so."""
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(clip_dir / "open_clip_config.json", bare)
    a, b = (create_model(f"openclip:{bare}", labels="dataset", classes=IN9_FOLDERS, templates="simple")
            for _ in range(2))
    assert a.spec.extra["init_seed"] == 0 and a.spec.checkpoint is None
    assert a.spec.checkpoint_sha256 == b.spec.checkpoint_sha256
    trained = create_model(f"openclip:{clip_dir}", labels="dataset", classes=IN9_FOLDERS, templates="simple")
    assert "init_seed" not in trained.spec.extra and trained.spec.checkpoint == str(clip_dir)

@pytest.mark.parametrize("name, needle", [
    ("openclip:ViT-B-32@no-such-tag", "unknown pretrained tag"),
    ("openclip:No-Such-Arch", "unknown open_clip model"),
    ("openclip:ViT-B-32@/no/such/weights.pt", "weights file not found"),
])
def test_bad_openclip_strings_are_one_line_errors_without_a_download(name, needle):
    with pytest.raises(CheckpointError, match=needle) as e:
        create_model(name)
    assert "\n" not in str(e.value)


def test_an_openclip_tower_refuses_another_input_size_with_resize_none(clip_dir):
    model = create_model(f"openclip:{clip_dir}", labels="dataset", classes=IN9_FOLDERS, templates="simple",
                         resize="none")
    with pytest.raises(BgbenchError, match="--resize native"):
        model(_images(1, size=48))
    resized = create_model(f"openclip:{clip_dir}", labels="dataset", classes=IN9_FOLDERS, templates="simple")
    assert resized(_images(1, size=48)).shape == (1, 9)


# ---------------------------------------------------------------------------------------------- hf:


def test_hf_classifier_records_its_processor_and_resizes_inside(vit_dir):
    from transformers import ViTForImageClassification
    model = create_model(f"hf:{vit_dir}")
    spec = model.spec
    assert spec.mean == pytest.approx((0.5, 0.4, 0.3)) and spec.std == pytest.approx((0.2, 0.25, 0.3))
    assert spec.input_size == (3, 16, 16) and spec.resize == "native" and spec.interpolation == "bilinear"
    assert (spec.label_space, spec.num_classes) == ("dataset", 9)
    assert spec.extra["preprocess"]["processor"]["size"] == {"height": 16, "width": 16}
    hf = ViTForImageClassification.from_pretrained(vit_dir).eval()
    x, x16 = _images(2, 32), _images(2, 16, seed=1)
    small = F.interpolate(x, size=(16, 16), mode="bilinear", antialias=True, align_corners=False).clamp(0, 1)
    with torch.no_grad():
        assert torch.allclose(model(x), hf(pixel_values=_normalized(small, spec.mean, spec.std)).logits, atol=1e-5)
        # an image of the native size is not touched: the model is the transformers forward pass itself
        assert torch.equal(model(x16), hf(pixel_values=_normalized(x16, spec.mean, spec.std)).logits)
    none = create_model(f"hf:{vit_dir}", resize="none")  # a ViT interpolates its position embeddings instead
    with torch.no_grad():
        expected = hf(pixel_values=_normalized(x, spec.mean, spec.std), interpolate_pos_encoding=True).logits
        assert none.spec.resize == "none" and torch.allclose(none(x), expected, atol=1e-5)


def _imagenet_names():
    names = {i: f"class number {i}" for i in range(1000)}
    names.update({0: "tench, Tinca tinca", 1: "goldfish, Carassius auratus", 207: "golden retriever",
                  999: "toilet tissue, toilet paper, bathroom tissue"})
    return names


@pytest.mark.parametrize("id2label, space", [
    (_imagenet_names(), "imagenet1k"),
    ({i: f"my class {i}" for i in range(1000)}, "dataset"),
    (None, "imagenet1k"),  # transformers' generic LABEL_i names on a 1000-wide head
])
def test_a_1000_wide_head_is_imagenets_by_its_names(tmp_path, id2label, space):
    folder = tiny_vit(tmp_path / "v", image_size=16, num_labels=1000, id2label=id2label)
    spec = create_model(f"hf:{folder}").spec
    assert spec.label_space == space and spec.num_classes == 1000


def test_native_resize_covers_then_centre_crops():
    ramp = torch.arange(8.0).repeat(4, 1).view(1, 1, 4, 8).expand(1, 3, 4, 8) / 10  # value = column / 10
    out = fit_to_native(ramp, (3, 2, 2), "nearest")
    # covering size (2, 4): nearest keeps columns 0, 2, 4, 6; the centre crop keeps the middle two
    assert torch.allclose(out[0, 0], torch.tensor([[0.2, 0.4], [0.2, 0.4]]))
    same = torch.rand(1, 3, 2, 2)
    assert fit_to_native(same, (3, 2, 2), "bicubic") is same


# ---------------------------------------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("scheme", ["openclip", "hf"])
def test_a_saved_checkpoint_loads_back_as_the_same_model(scheme, clip_dir, vit_dir, tmp_path):
    name = f"openclip:{clip_dir}" if scheme == "openclip" else f"hf:{vit_dir}"
    model = create_model(name, classes=IN9_FOLDERS, labels="dataset" if scheme == "openclip" else "auto",
                         templates="simple" if scheme == "openclip" else "openai")
    save_checkpoint(model, tmp_path / "m.pt")
    again = create_model(f"file:{tmp_path / 'm.pt'}")
    x = _images(2, 32)
    with torch.no_grad():
        assert torch.equal(model(x), again(x))
    for field in ("mean", "std", "input_size", "resize", "interpolation", "label_space", "num_classes"):
        assert getattr(again.spec, field) == getattr(model.spec, field), field
    assert again.spec.extra["scheme"] == scheme
    assert again.spec.checkpoint_sha256 == hashlib.sha256((tmp_path / "m.pt").read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------- every job


@pytest.mark.parametrize("scheme", ["openclip", "hf"])
def test_every_job_runs_the_tiny_model_through_its_scheme(scheme, clip_dir, vit_dir, synth_root, tmp_path):
    model = f"openclip:{clip_dir}" if scheme == "openclip" else f"hf:{vit_dir}"
    db = tmp_path / "r.db"
    common = ["--model", model, "--data", synth_root, "--db", db, "--quiet"]
    ev = run_cli("eval", *common, "--variants", "original", "mixed_same", "mixed_rand", "--json")
    assert ev.returncode == 0, ev.stderr
    if scheme == "hf":  # 32-px images, a 16-px model: resized, and said so
        assert "resizing 32x32 images to its input size 16x16" in ev.stderr
    jobs = [("challenge", "--sample", "3", "--precision", "bf16-verified"),
            ("probe", "noise", "--levels", "0.5", "--trials", "1"),
            ("probe", "saliency", "--examples", "1", "--out", tmp_path / "sal")]
    for job in jobs:
        cut = 2 if job[0] == "probe" else 1
        proc = run_cli(*job[:cut], *common, *job[cut:])
        assert proc.returncode == 0, (job, proc.stderr)
    edit = run_cli("edit", "--data", synth_root, "--out", tmp_path / "edit", "--levels", "complexity_adv",
                   "--adv-steps", "1", "--model", model, "--db", db, "--quiet", "--json")
    assert edit.returncode == 0, edit.stderr
    assert (tmp_path / "edit" / "complexity_adv" / "val").is_dir()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT kind, spec FROM runs ORDER BY id").fetchall()
    assert [k for k, _ in rows] == ["eval", "challenge", "probe_noise", "probe_saliency", "edit"]
    for kind, spec in rows[:4]:  # the model's preprocessing travels with every run that used it
        spec = json.loads(spec)
        assert spec["name"] == model and spec["resize"] == "native" and spec["extra"]["scheme"] == scheme
        assert spec["input_size"] == ([3, 32, 32] if scheme == "openclip" else [3, 16, 16])
        assert spec["mean"] == pytest.approx(CLIP_MEAN if scheme == "openclip" else [0.5, 0.4, 0.3])
        if scheme == "openclip":
            assert spec["extra"]["zero_shot"]["class_names"][0] == "circle"  # Synthetic-9's own classes


def test_zero_shot_options_on_a_model_with_its_own_head_are_one_line_errors(synth_root, tmp_path):
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--labels", "dataset", "--db",
                   tmp_path / "r.db", "--quiet")
    assert_one_line_error(proc, "zero-shot")


def test_models_lists_every_scheme():
    proc = run_cli("models", "--schemes")
    assert proc.returncode == 0
    for usage in ("timm:ARCH", "file:PATH", "zoo:NAME", "openclip:ARCH[@PRETRAINED]", "hf:REPO_OR_DIR",
                  "predictions:NAME"):
        assert usage in proc.stdout
    assert "openclip:ViT-B-32" in run_cli("models", "openclip:ViT-B-32*").stdout
    assert np.all([line.startswith("openclip:") for line in run_cli("models", "openclip:*").stdout.split()])


# ---------------------------------------------------------------------------------------------- saliency


@pytest.mark.parametrize("scheme", ["openclip", "hf"])
def test_saliency_on_a_foundation_vit_is_pytorch_grad_cams_on_its_token_grid(scheme, clip_dir, vit_dir, synth64):
    """64-px images; the wrapper resizes them to the tower's input (32 px for the CLIP, 16 px for the
    ViT), whose patch tokens make a 4x4 grid either way. The layer is chosen automatically: each
    library's last pre-attention norm (open_clip's ln_1, transformers' layernorm_before)."""
    from bgbench.measures.saliency import MEASURE as SALIENCY
    from bgbench.measures.saliency.probe import SaliencyConfig
    from helpers.saliency_oracle import check_against_grad_cam
    if scheme == "openclip":
        model = create_model(f"openclip:{clip_dir}", labels="dataset", classes=IN9_FOLDERS, templates="simple")
        layer_name, layer = "visual.transformer.resblocks.1.ln_1", model.net.visual.transformer.resblocks[1].ln_1
    else:
        model = create_model(f"hf:{vit_dir}")
        layer_name, layer = "model.vit.layers.1.layernorm_before", model.net.model.vit.layers[1].layernorm_before
    result = run_measure(SALIENCY, model, synth64, SaliencyConfig(batch_size=64, examples=0), progress=False)
    assert result.config["layer"] == layer_name

    def to_grid(t):  # RIVAL10's vit_reshape_transform: drop the class token, 4x4 patch grid
        return t[:, 1:, :].reshape(t.size(0), 4, 4, t.size(2)).permute(0, 3, 1, 2)
    check_against_grad_cam(model, layer, synth64, result.rows, reshape=to_grid, flat_at_most=0.5)
