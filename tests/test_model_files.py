"""Model files in every format bgbench reads, proved against the eager module they were written from.

One tiny timm network (test_resnet, 9 classes, seeded, fitted a few steps so that it classifies the
originals and the challenge must search backgrounds to fool it) is written by this test as
safetensors weights, a torch.export program, an ONNX model and TorchScript. `bgbench eval` and
`bgbench challenge --sample 4` run each file, and what they store is compared with the eager
module's own outputs on the same images, computed here from the files on disk (PIL, numpy), not by
bgbench: every prediction and every verdict must be equal (fp32). Bad files are one clear line
each; measures that need layers or gradients refuse the formats that cannot give them.
"""
import hashlib
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import assert_one_line_error, run_cli

from bgbench.store import Store

#: IN-9's normalization (DESIGN §1), which a 9-class model gets inside bgbench's wrapper.
IN9_MEAN, IN9_STD = (0.4717, 0.4499, 0.3837), (0.2600, 0.2516, 0.2575)
VARIANTS = ("original", "mixed_rand", "only_bg_t")


def _image(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0


def _tensor(images) -> torch.Tensor:
    """(N, 3, H, W) float32 from HWC [0,1] arrays."""
    return torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous()


def _normalized(x: torch.Tensor) -> torch.Tensor:
    return (x - torch.tensor(IN9_MEAN).view(1, 3, 1, 1)) / torch.tensor(IN9_STD).view(1, 3, 1, 1)


def _files(root: Path, variant: str) -> dict:
    """image id ('00_circle/synth_val_00000') -> path, for one variant folder."""
    folder = root / variant / "val"
    return {p.relative_to(folder).with_suffix("").as_posix(): p for p in sorted(folder.rglob("*.png"))}


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One torch thread (as conftest's `one_thread`, for the whole module): a tiny network gains
    nothing from a second thread on a 2-core machine but contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def eager(synth_root):
    """The eager module every format is written from: timm's test_resnet, 9 classes, seeded, fitted
    40 steps on the val originals (it gets them right, so the challenge searches backgrounds)."""
    import timm
    torch.manual_seed(0)
    net = timm.create_model("test_resnet", num_classes=9)
    originals = _files(synth_root, "original")
    x = _normalized(_tensor([_image(p) for p in originals.values()]))
    y = torch.tensor([int(i[:2]) for i in originals])
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(40):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return net.eval()


@pytest.fixture(scope="module")
def model_files(eager, tmp_path_factory):
    """format -> the model arguments of its file, written from `eager` by the libraries themselves."""
    from safetensors.torch import save_file
    out = tmp_path_factory.mktemp("model_files")
    example = torch.rand(2, 3, 32, 32)
    save_file(eager.state_dict(), str(out / "m.safetensors"))
    program = torch.export.export(eager, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, str(out / "m.pt2"))
    with warnings.catch_warnings():  # the one TorchScript file of the suite: an old file, as users have them
        warnings.simplefilter("ignore")
        torch.jit.trace(eager, example).save(str(out / "m.ts"))
    files = {"safetensors": ["--model", "timm:test_resnet", "--checkpoint", out / "m.safetensors"],
             "export": ["--model", f"file:{out / 'm.pt2'}"],
             "torchscript": ["--model", f"file:{out / 'm.ts'}"]}
    if _has_onnxruntime():
        _onnx_with_normalization(eager, out / "m.onnx")
        files["onnx"] = ["--model", f"onnx:{out / 'm.onnx'}"]
    return files


def _has_onnxruntime() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401 - torch.onnx.export's exporter
    except ImportError:
        return False
    return True


class _Normalized(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(_normalized(x))


def _onnx_with_normalization(eager, path: Path, shape=(2, 3, 32, 32), dynamic=True) -> None:
    """The eager network with IN-9's normalization inside the graph, its metadata saying so (mean 0,
    std 1): a reader that ignored the metadata would normalize twice and disagree."""
    program = torch.onnx.export(_Normalized(eager).eval(), (torch.rand(*shape),), dynamo=True, verbose=False,
                                dynamic_shapes=({0: "batch"},) if dynamic else None)
    program.model.metadata_props.update({"mean": "0,0,0", "std": "1,1,1", "label_space": "dataset"})
    program.save(str(path))


FORMATS = ["safetensors", "export", "onnx", "torchscript"]


def _args(model_files, fmt):
    if fmt not in model_files:
        pytest.importorskip("onnxruntime")
        pytest.importorskip("onnxscript")
    return model_files[fmt]


@pytest.fixture(scope="module")
def oracle(eager, synth_root):
    """The eager module's predictions and softmax confidences, variant -> image id -> (pred, conf)."""
    out = {}
    with torch.no_grad():
        for v in VARIANTS:
            files = _files(synth_root, v)
            probs = torch.softmax(eager(_normalized(_tensor([_image(p) for p in files.values()]))), 1)
            out[v] = {i: (int(p.argmax()), float(p.max())) for i, p in zip(files, probs)}
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_eval_predictions_of_each_format_equal_the_eager_modules(fmt, model_files, oracle, synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("eval", *_args(model_files, fmt), "--data", synth_root, "--variants", *VARIANTS, "--json",
                   "--db", db, "--quiet")
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    with Store(db) as store:
        spec = json.loads(store.get_run(run_id)["spec"])
        for v in VARIANTS:
            rows = {r["image_id"]: (r["pred"], r["confidence"]) for r in store.predictions(run_id, v)}
            assert rows.keys() == oracle[v].keys()
            assert {i: p for i, (p, _) in rows.items()} == {i: p for i, (p, _) in oracle[v].items()}, v
            np.testing.assert_allclose([rows[i][1] for i in rows], [oracle[v][i][1] for i in rows], atol=1e-5)
    assert spec["extra"]["format"] == fmt
    path = Path(str(_args(model_files, fmt)[-1]).split(":", 1)[-1])
    assert spec["checkpoint_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    if fmt == "onnx":
        onnx = spec["extra"]["onnx"]
        assert onnx["providers"] == ["CPUExecutionProvider"] and onnx["opset"][""] >= 7
        assert spec["mean"] == [0.0, 0.0, 0.0] and spec["std"] == [1.0, 1.0, 1.0]  # from the metadata
        assert run_cli("report", "--db", db, "--out", tmp_path / "report", "--quiet").returncode == 0
        page = (tmp_path / "report" / "index.html").read_text()
        assert (f"<dt>format</dt><dd>onnx: onnxruntime {onnx['onnxruntime']}, opset {onnx['opset']['']}, providers "
                f"CPUExecutionProvider</dd>") in page


def _composites(root: Path, image_id: str) -> torch.Tensor:
    """The foreground `image_id` over every ONLY-BG-T background of the dataset, B * (1 - m) + F * m,
    in the backgrounds' sorted order (the challenge's definition, DESIGN §2)."""
    fg = _tensor([_image(root / "original" / "val" / f"{image_id}.png")])
    m = torch.from_numpy(np.load(root / "fg_mask" / "val" / f"{image_id}.npy").astype(np.float32))[None, None]
    bgs = _tensor([_image(p) for p in _files(root, "only_bg_t").values()])
    return bgs * (1 - m) + fg * m


def _check_verdicts(eager, root: Path, rows: dict) -> None:
    """Each stored verdict against the eager module: its clean prediction; a fooled foreground's
    fooling background gives, as a composite, the stored wrong prediction; a survivor's every
    composite is its class."""
    backgrounds = list(_files(root, "only_bg_t"))
    with torch.no_grad():
        for image_id, r in rows.items():
            label = int(image_id[:2])
            clean = eager(_normalized(_tensor([_image(root / "original" / "val" / f"{image_id}.png")])))
            assert r["clean_pred"] == int(clean.argmax()), image_id
            preds = eager(_normalized(_composites(root, image_id))).argmax(1)
            assert r["fooled"] == bool((preds != label).any()), image_id
            if r["fooled"]:
                fooling = int(preds[backgrounds.index(r["fooling_bg"])])
                assert r["fooling_pred"] == fooling != label, image_id


def test_challenge_verdicts_of_every_format_equal_the_eager_modules(eager, model_files, synth_root, tmp_path):
    verdicts = {}
    for fmt in [f for f in FORMATS if f in model_files]:
        db = tmp_path / f"{fmt}.db"
        proc = run_cli("challenge", *model_files[fmt], "--data", synth_root, "--sample", 4, "--json", "--db", db,
                       "--quiet")
        assert proc.returncode == 0, proc.stderr
        with Store(db) as store:
            rows = store.challenge_results(json.loads(proc.stdout)["run_id"])
        verdicts[fmt] = {r["image_id"]: {k: r[k] for k in ("clean_pred", "fooled", "pairs", "fooling_bg",
                                                          "fooling_pred")} for r in rows}
    first = verdicts["safetensors"]
    assert len(first) == 4
    assert any(r["clean_pred"] == int(i[:2]) for i, r in first.items())  # a search through backgrounds ran
    _check_verdicts(eager, synth_root, first)
    for fmt, got in verdicts.items():
        assert got == first, fmt


# ---------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("fmt", ["export", "onnx", "torchscript"])
def test_measures_that_hook_layers_refuse_a_format_without_them_in_one_line(fmt, model_files, synth_root,
                                                                             tmp_path):
    for probe in ("saliency", "features"):
        proc = run_cli("probe", probe, *_args(model_files, fmt), "--data", synth_root, "--db", tmp_path / "r.db")
        assert_one_line_error(proc, f"probe {probe}", "layers", "--checkpoint FILE.safetensors")
    if fmt == "onnx":  # forwards only: the adversarial edit ascends the loss through the model
        proc = run_cli("edit", *_args(model_files, fmt), "--data", synth_root, "--out", tmp_path / "ed",
                       "--attributes", "complexity", "--db", tmp_path / "r.db")
        assert_one_line_error(proc, "complexity_adv", "gradients", "file:FILE.pt2")
        assert not (tmp_path / "ed").exists()


def test_a_study_skips_a_layer_measure_of_an_exported_program_and_runs_the_rest(model_files, synth_root, tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(f'models = ["{model_files["export"][-1]}"]\ndatasets = ["{synth_root}"]\n[measures.eval]\n'
                     f'[measures.saliency]\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "saliency m on " in proc.stderr and "skipped: saliency hooks the network's layers" in proc.stderr
    with Store(tmp_path / "r.db") as store:
        assert sorted(r["kind"] for r in store.runs()) == ["eval"]


def test_profile_runs_every_step_an_onnx_model_can_beside_a_timm_model(model_files, model_ckpt, synth_root,
                                                                       tmp_path):
    """`profile` of an ONNX model and a trained timm model (a bgbench checkpoint): each runs what it
    can; the ONNX model's layer measures are skipped with their one-line reason, and the scorecard
    says n/a and why."""
    onnx = _args(model_files, "onnx")[-1]
    args = ["profile", "--model", onnx, "--model", f"file:{model_ckpt}", "--data", synth_root, "--measures", "eval",
            "noise,saliency", "--db", tmp_path / "r.db", "--out", tmp_path / "rep", "--quiet"]
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    reason = "saliency hooks the network's layers (Grad-CAM, penultimate features), which m cannot give"
    assert f"saliency m on {synth_root.name}: skipped: {reason}" in proc.stderr
    doc = json.loads(proc.stdout)
    ran = sorted((s["measure"], s["model"]) for s in doc["steps"] if s["run"] is not None)
    trained = model_ckpt.parent.name  # a run folder's model.pt is labelled by its folder
    assert ran == sorted([("eval", "m"), ("eval", trained), ("noise", "m"), ("noise", trained),
                          ("saliency", trained)])
    na = [r for r in doc["scorecard"] if r["model"] == "m" and r["measure"].startswith("saliency:")]
    assert na and all(r["value"] is None and reason in r["not_available"] for r in na)
    measured = [r for r in doc["scorecard"] if r["model"] == trained and r["measure"].startswith("saliency:")]
    # measured: 32-px images leave test_resnet's last layer 1x1, so every Grad-CAM map is zero and the
    # precision undefined: a run's n/a, not a skip
    assert measured and all(r["run"] is not None and "skipped" not in str(r["not_available"]) for r in measured)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert 'class="meta na" title="n/a: saliency hooks the network&#39;s layers' in page
    text = run_cli(*args)  # everything is stored now: the text scorecard, its n/a cell and the reason under it
    assert text.returncode == 0, text.stderr
    assert "n/a [1]" in text.stdout and f"[1] skipped: {reason}" in text.stdout


def test_profile_refuses_an_unknown_measure_in_one_line(synth_root, tmp_path):
    proc = run_cli("profile", "--model", "timm:test_resnet", "--data", synth_root, "--measures", "eval", "salency",
                   "--db", tmp_path / "r.db", "--out", tmp_path / "rep")
    assert_one_line_error(proc, "measures.salency: unknown measure")


def test_a_probe_that_needs_only_forwards_runs_an_onnx_model(model_files, synth_root, tmp_path):
    proc = run_cli("probe", "noise", *_args(model_files, "onnx"), "--data", synth_root, "--trials", 1, "--levels",
                   "0.5", "--db", tmp_path / "r.db", "--quiet")
    assert proc.returncode == 0, proc.stderr


#: A preprocessing no rule would guess (neither IN-9's nor ImageNet's): the one `--mean/--std` must give.
OWN_MEAN, OWN_STD = (0.2, 0.7, 0.4), (0.1, 0.2, 0.3)


def _eval_predictions(db: Path, run_id: int, variant: str) -> dict:
    with Store(db) as store:
        return {r["image_id"]: r["pred"] for r in store.predictions(run_id, variant)}


def test_an_onnx_file_without_metadata_warns_and_mean_std_give_the_eager_predictions(eager, synth_root, tmp_path):
    """A graph exported with torch.onnx.export and no metadata says nothing of its preprocessing: the
    run says in one warning line what it assumed and how to say otherwise, and records it; with
    --mean/--std its predictions are the eager module's under that preprocessing (computed here)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    path = tmp_path / "plain.onnx"
    torch.onnx.export(eager, (torch.rand(2, 3, 32, 32),), dynamo=True, verbose=False,
                      dynamic_shapes=({0: "batch"},)).save(str(path))
    files = _files(synth_root, "mixed_rand")
    x = _tensor([_image(p) for p in files.values()])
    mean, std = torch.tensor(OWN_MEAN).view(1, 3, 1, 1), torch.tensor(OWN_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        truth = dict(zip(files, eager((x - mean) / std).argmax(1).tolist()))
    common = ["eval", "--model", f"onnx:{path}", "--data", synth_root, "--variants", "mixed_rand", "--json"]

    guessed = run_cli(*common, "--db", tmp_path / "a.db", "--quiet")
    assert guessed.returncode == 0, guessed.stderr
    warning = [ln for ln in guessed.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1, guessed.stderr
    assert "metadata has no mean/std" in warning[0] and "IN-9's mean (0.4717, 0.4499, 0.3837)" in warning[0]
    assert "--mean R,G,B --std R,G,B" in warning[0]
    run_a = json.loads(guessed.stdout)["run_id"]
    with Store(tmp_path / "a.db") as store:
        spec = json.loads(store.get_run(run_a)["spec"])
    assert spec["extra"]["normalization"]["source"] == "assumed"
    assert _eval_predictions(tmp_path / "a.db", run_a, "mixed_rand") != truth  # the guess changes predictions

    given = run_cli(*common, "--mean", ",".join(map(str, OWN_MEAN)), "--std", " ".join(map(str, OWN_STD)),
                    "--db", tmp_path / "b.db", "--quiet")
    assert given.returncode == 0, given.stderr
    assert "warning:" not in given.stderr
    run_b = json.loads(given.stdout)["run_id"]
    assert _eval_predictions(tmp_path / "b.db", run_b, "mixed_rand") == truth
    with Store(tmp_path / "b.db") as store:
        run = store.get_run(run_b)
    spec, config = json.loads(run["spec"]), json.loads(run["config"])
    assert spec["extra"]["normalization"] == {"source": "flags", "flag": "--mean/--std", "mean": list(OWN_MEAN),
                                              "std": list(OWN_STD)}
    assert config["model_options"]["mean"] == list(OWN_MEAN) and config["model_options"]["std"] == list(OWN_STD)


@pytest.mark.parametrize("flags, needle", [
    (["--mean", "0.5,0.5"], "--mean takes three numbers"),
    (["--mean", "0.5,0.5,0.5"], "--mean and --std go together"),
    (["--mean", "0.5,0.5,0.5", "--std", "0.5,0,0.5"], "--std must be positive"),
    (["--mean", "0.5,0.5,0.5", "--std", "0.5,0.5,0.5", "--norm", "in9"], "give one"),
    (["--input-size", "big"], "--input-size takes a side or HxW")])
def test_bad_normalization_flags_are_one_line(flags, needle, synth_root, tmp_path):
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, *flags, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, needle)


def test_torchscript_loads_without_torchs_deprecation_warning(model_files):
    from bgbench.models.checkpoint import read_checkpoint
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert read_checkpoint(str(model_files["torchscript"][-1]).split(":", 1)[1]).kind == "torchscript"
    assert not [w for w in caught if issubclass(w.category, FutureWarning)], [str(w.message) for w in caught]


# ---------------------------------------------------------------------------------------------- bad files


def test_a_file_in_no_known_format_is_one_line(synth_root, tmp_path):
    junk = tmp_path / "model.bin"
    junk.write_bytes(b"GIF89a not a model at all" * 10)
    for args in (["--model", f"file:{junk}"], ["--model", "timm:test_resnet", "--checkpoint", junk]):
        assert_one_line_error(run_cli("eval", *args, "--data", synth_root, "--db", tmp_path / "r.db"),
                              "no format bgbench reads", "safetensors", "ONNX")


def test_a_pt2_this_torch_cannot_load_is_one_line(model_files, synth_root, tmp_path):
    """A program saved by another torch (its schema changed): the archive's model.json as a newer
    release would write it, every other entry as saved."""
    import zipfile
    src = Path(model_files["export"][-1].split(":", 1)[1])
    bad = tmp_path / "newer.pt2"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename.endswith("/models/model.json"):
                doc = json.loads(data)
                doc.update(torch_version="9.9.0", schema_version={"major": 99, "minor": 0},
                           graph_module={"graph": "a format from the future"})
                data = json.dumps(doc).encode()
            zout.writestr(item, data)
    proc = run_cli("eval", "--model", f"file:{bad}", "--data", synth_root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "cannot load the torch.export program", "saved by torch 9.9.0")


def test_an_onnx_model_whose_fixed_size_does_not_fit_the_images_is_one_line(eager, synth_root, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    path = tmp_path / "fixed48.onnx"
    _onnx_with_normalization(eager, path, shape=(1, 3, 48, 48), dynamic=False)  # batch and size fixed
    proc = run_cli("eval", "--model", f"onnx:{path}", "--data", synth_root, "--resize", "none", "--db",
                   tmp_path / "r.db")
    assert_one_line_error(proc, "48x48", "32x32", "--resize native")
    resized = run_cli("eval", "--model", f"onnx:{path}", "--data", synth_root, "--variants", "original", "--db",
                      tmp_path / "r.db", "--quiet")  # by default its fixed size is met by resizing, a batch of 1
    assert resized.returncode == 0, resized.stderr
    assert "resizing 32x32 images to its input size 48x48" in resized.stderr


def test_safetensors_that_do_not_fit_the_architecture_are_one_line(eager, synth_root, tmp_path):
    from safetensors.torch import save_file
    weights = {k: v for k, v in eager.state_dict().items() if not k.startswith("layer4.")}
    save_file(weights, str(tmp_path / "partial.safetensors"))
    proc = run_cli("eval", "--model", "timm:test_resnet", "--checkpoint", tmp_path / "partial.safetensors", "--data",
                   synth_root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "does not fit timm:test_resnet", "missing", "layer4.")
    (tmp_path / "broken.safetensors").write_bytes((20).to_bytes(8, "little") + b'{"a": not json}' + b"\0" * 8)
    proc = run_cli("eval", "--model", "timm:test_resnet", "--checkpoint", tmp_path / "broken.safetensors", "--data",
                   synth_root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "cannot read safetensors file")


# ---------------------------------------------------------------------------------------------- others


def test_a_hugging_face_folder_of_config_json_and_model_safetensors(tmp_path):
    from transformers import ViTConfig, ViTForImageClassification
    from bgbench.models.options import create_model
    torch.manual_seed(0)
    cfg = ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, num_labels=9)
    net = ViTForImageClassification(cfg).eval()
    net.save_pretrained(tmp_path / "vit")  # no image processor: ImageNet's mean/std, said and recorded
    assert sorted(p.name for p in (tmp_path / "vit").iterdir()) == ["config.json", "model.safetensors"]
    model = create_model(f"hf:{tmp_path / 'vit'}")
    x = torch.rand(3, 3, 16, 16)
    mean = torch.tensor((0.485, 0.456, 0.406)).view(1, 3, 1, 1)  # ImageNet's, for a folder without a processor
    std = torch.tensor((0.229, 0.224, 0.225)).view(1, 3, 1, 1)
    with torch.no_grad():
        assert torch.equal(model(x), net(pixel_values=(x - mean) / std).logits)
    assert model.format == "transformers" and model.has_layers


def test_import_and_help_load_no_onnxruntime():
    code = ("import sys, bgbench, bgbench.cli\n"
            "try:\n    bgbench.cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'onnxruntime' not in sys.modules, 'onnxruntime was imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_models_schemes_lists_the_formats():
    proc = run_cli("models", "--schemes")
    assert proc.returncode == 0
    for word in ("onnx:FILE.onnx", "safetensors", "torch.export", "TorchScript", "forwards only"):
        assert word in proc.stdout
    doc = json.loads(run_cli("models", "--schemes", "--json").stdout)
    file_formats = {f["format"]: f for s in doc if s["scheme"] == "file" for f in s["formats"]}
    assert not file_formats["export"]["layers"] and file_formats["export"]["gradients"]
    assert not file_formats["onnx"]["gradients"]
