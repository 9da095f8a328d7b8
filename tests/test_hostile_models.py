"""Hostile model files and trees, as an attacker or a careless user would hand them over (issue 44).

1. The crafted `.pt2` files start from a real `torch.export.save` archive of a tiny network and
   change one entry: a weight marked `use_pickle` and replaced by a pickle whose `__reduce__` writes
   a marker file, the example inputs replaced by such a pickle, a guard or a shape expression that
   Python would evaluate, a node that calls something else than a PyTorch operator, a compiled
   library, a name given twice. Each is handed to every door a model comes in by (`--model file:`,
   `--checkpoint`, a study's `--dry-run`), and the marker must never appear.
2. Trees whose images (or class folders) are links out of the dataset root, ImageNet's included.
3. What used to be a traceback: input sizes no memory holds (or of zero), hf:/openclip: folders and
   the timm hub cache with bad weights, decompression bombs, two scorecard exports at once.
4. What used to be wrong or silent: ONNX metadata that does not fit, texture and renditions blaming
   the wrong flag, a val image listed twice, a watermark class that marks nothing, integer weights.

Each test failed before its fix.
"""
from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from conftest import assert_one_line_error, run_cli


class _Writes:
    """A pickle that, when unpickled by a full unpickler, writes `marker` (what an attacker ships)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


class _Tiny(torch.nn.Module):
    """Nine classes from a 3-channel image: a conv, a pooled linear head."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 9)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


@pytest.fixture(scope="module")
def real_pt2(tmp_path_factory) -> Path:
    """A real torch.export archive with a dynamic batch (so it holds a shape expression)."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("pt2") / "tiny.pt2"
    batch = torch.export.Dim("batch", min=1, max=1024)
    program = torch.export.export(_Tiny().eval(), (torch.zeros(2, 3, 32, 32),), dynamic_shapes=({0: batch},))
    torch.export.save(program, str(path))
    return path


def rewrite(src: Path, dst: Path, change) -> Path:
    """A copy of the zip `src` with each entry's bytes passed through `change(name, data)`."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, change(info.filename, zin.read(info.filename)))
    return dst


def pickled_weight(src: Path, dst: Path, marker: Path) -> Path:
    """The first weight marked `use_pickle: true` and replaced by a pickle that writes `marker`."""
    config = json.loads(zipfile.ZipFile(src).read(_entry(src, "data/weights/model_weights_config.json")))
    first = next(iter(config["config"].values()))
    first["use_pickle"] = True

    def change(name, data):
        if name.endswith("data/weights/model_weights_config.json"):
            return json.dumps(config).encode()
        if name.endswith("data/weights/" + first["path_name"]):
            return pickle.dumps(_Writes(marker))
        return data
    return rewrite(src, dst, change)


def pickled_sample_inputs(src: Path, dst: Path, marker: Path) -> Path:
    """`data/sample_inputs/model.pt` replaced by a torch.save'd object that writes `marker`."""
    def change(name, data):
        if name.endswith("data/sample_inputs/model.pt"):
            buf = io.BytesIO()
            torch.save(_Writes(marker), buf)
            return buf.getvalue()
        return data
    return rewrite(src, dst, change)


def edited_graph(src: Path, dst: Path, edit) -> Path:
    """`models/model.json` passed through `edit(document)` (which changes it in place)."""
    def change(name, data):
        if name.endswith("models/model.json"):
            doc = json.loads(data)
            edit(doc)
            return json.dumps(doc).encode()
        return data
    return rewrite(src, dst, change)


def _replace_expressions(obj, template: str) -> int:
    """Every shape expression (`expr_str`) of a graph document replaced by `template.format(it)`."""
    count = 0
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "expr_str" and isinstance(value, str):
                obj[key] = template.format(value)
                count += 1
            else:
                count += _replace_expressions(value, template)
    elif isinstance(obj, list):
        count += sum(_replace_expressions(v, template) for v in obj)
    return count


def _entry(path: Path, suffix: str) -> str:
    return next(n for n in zipfile.ZipFile(path).namelist() if n.endswith(suffix))


def _writes(marker: Path) -> str:
    """Python that writes `marker` and is truthy (for a guard or an expression)."""
    return f"open({str(marker)!r}, 'w').close() or True"


def _crafted(kind: str, real_pt2: Path, tmp_path: Path, marker: Path) -> Path:
    dst = tmp_path / "model.pt2"
    if kind == "pickled_weight":
        return pickled_weight(real_pt2, dst, marker)
    if kind == "pickled_sample_inputs":
        return pickled_sample_inputs(real_pt2, dst, marker)
    if kind == "guard":
        return edited_graph(real_pt2, dst, lambda doc: doc.__setitem__("guards_code", [_writes(marker)]))
    if kind == "shape_expression":
        return edited_graph(real_pt2, dst, lambda doc: _replace_expressions(doc, f"({_writes(marker)}) and {{}}"))
    raise AssertionError(kind)


KINDS = ("pickled_weight", "pickled_sample_inputs", "guard", "shape_expression")


@pytest.mark.parametrize("kind", KINDS)
def test_a_crafted_pt2_runs_no_code_in_eval(kind, real_pt2, synth_root, tmp_path):
    marker = tmp_path / "marker"
    crafted = _crafted(kind, real_pt2, tmp_path, marker)
    proc = run_cli("eval", "--data", synth_root, "--model", f"file:{crafted}", "--batch-size", "8")
    assert not marker.exists(), f"the {kind} archive ran its code"
    assert_one_line_error(proc, str(crafted), "--trust-checkpoint")


@pytest.mark.parametrize("kind", KINDS)
def test_a_crafted_pt2_as_checkpoint_runs_no_code(kind, real_pt2, synth_root, tmp_path):
    marker = tmp_path / "marker"
    crafted = _crafted(kind, real_pt2, tmp_path, marker)
    proc = run_cli("eval", "--data", synth_root, "--model", "timm:test_resnet", "--checkpoint", crafted)
    assert not marker.exists(), f"the {kind} archive ran its code"
    assert_one_line_error(proc, str(crafted), "--trust-checkpoint")


@pytest.mark.parametrize("kind", ["pickled_weight", "pickled_sample_inputs"])
def test_a_crafted_pt2_runs_no_code_in_a_dry_run(kind, real_pt2, synth_root, tmp_path):
    marker = tmp_path / "marker"
    crafted = _crafted(kind, real_pt2, tmp_path, marker)
    proc = run_cli("profile", "--model", f"file:{crafted}", "--data", synth_root, "--out", tmp_path / "out",
                   "--dry-run")
    assert not marker.exists(), f"the {kind} archive ran its code in a dry run"
    assert "--trust-checkpoint" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_graph_node_that_calls_no_pytorch_operator_is_refused(real_pt2, synth_root, tmp_path):
    """A node's target is looked up as a path under `torch`, and any callable found is called when
    the program runs: `torch.os.system` is one."""
    def edit(doc):
        doc["graph_module"]["graph"]["nodes"][0]["target"] = "torch.os.system"
    crafted = edited_graph(real_pt2, tmp_path / "model.pt2", edit)
    proc = run_cli("eval", "--data", synth_root, "--model", f"file:{crafted}")
    assert_one_line_error(proc, "torch.os.system", "--trust-checkpoint")


def test_a_compiled_library_in_a_pt2_is_refused(real_pt2, synth_root, tmp_path):
    """`data/aotinductor/` holds shared libraries that loading the package runs."""
    crafted = tmp_path / "model.pt2"
    rewrite(real_pt2, crafted, lambda name, data: data)
    root = zipfile.ZipFile(crafted).namelist()[0].split("/")[0]
    with zipfile.ZipFile(crafted, "a") as z:
        z.writestr(f"{root}/data/aotinductor/model/model.so", b"\x7fELF")
    proc = run_cli("eval", "--data", synth_root, "--model", f"file:{crafted}")
    assert_one_line_error(proc, "aotinductor", "--trust-checkpoint")


def test_the_real_archive_loads_without_trust_and_runs(real_pt2, synth_root):
    """The checks refuse nothing torch.export.save writes for an ordinary network."""
    proc = run_cli("eval", "--data", synth_root, "--model", f"file:{real_pt2}", "--batch-size", "8")
    assert proc.returncode == 0, proc.stderr


def test_torchs_fallback_to_a_full_unpickler_is_closed_while_loading(tmp_path):
    """Inside `weights_only_loads`, even `torch.load(weights_only=False)` (torch.export's fallback)
    reads with the restricted unpickler."""
    from bgbench.models.pt2_guard import weights_only_loads
    marker = tmp_path / "marker"
    buf = io.BytesIO()
    torch.save(_Writes(marker), buf)
    with weights_only_loads():
        with pytest.raises(Exception):
            torch.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert not marker.exists()


# -- item 2: every layout reads inside its root ---------------------------------------------------

def _jpeg(path: Path, seed: int = 0, side: int = 40) -> Path:
    import numpy as np
    from PIL import Image
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 255, (side, side, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format="JPEG")
    return path


def ilsvrc_val(root: Path, n: int = 3) -> Path:
    """The ILSVRC release's flat val (`ILSVRC/Data/CLS-LOC/val/`) of `n` images of class 1, with its
    LOC_val_solution.csv; returns the val folder."""
    from bgbench.data.imagenet import imagenet_synsets
    val = root / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    rows = []
    for k in range(1, n + 1):
        stem = f"ILSVRC2012_val_{k:08d}"
        _jpeg(val / f"{stem}.JPEG", seed=k)
        rows.append(f"{stem},{imagenet_synsets()[1]} 1 1 30 30")
    (root / "LOC_val_solution.csv").write_text("ImageId,PredictionString\n" + "\n".join(rows) + "\n")
    return val


@pytest.fixture
def secret(tmp_path) -> Path:
    """An image outside every dataset root: what a hostile link points at."""
    return _jpeg(tmp_path / "outside" / "secret.jpg", seed=99)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """timm's tiny 1000-class tag, offline from a Hugging Face cache written here."""
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    return f"timm:{TAG}"


def test_eval_imagenet_refuses_a_val_image_linked_outside_its_root(tmp_path, secret, hub):
    root = tmp_path / "imagenet"
    val = ilsvrc_val(root)
    link = val / "ILSVRC2012_val_00000002.JPEG"
    link.unlink()
    link.symlink_to(Path("../../../..") / ".." / "outside" / "secret.jpg")
    assert link.resolve() == secret.resolve()
    db = tmp_path / "r.db"
    proc = run_cli("eval", "--model", hub, "--imagenet", root, "--db", db)
    assert_one_line_error(proc, str(link), "outside the dataset root")
    assert not db.exists() or "secret" not in db.read_bytes().decode("latin-1")


def test_a_torchvision_class_folder_linked_outside_is_refused(tmp_path, secret, hub):
    from bgbench.data.imagenet import imagenet_synsets
    root = tmp_path / "imagenet"
    _jpeg(root / "val" / imagenet_synsets()[1] / "a.JPEG")
    (root / "val" / imagenet_synsets()[2]).symlink_to(secret.parent, target_is_directory=True)
    proc = run_cli("eval", "--model", hub, "--imagenet", root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "secret.jpg", "outside the dataset root")


def test_an_in9_image_linked_outside_is_refused(synth_copy, secret, tmp_path):
    folder = synth_copy / "original" / "val" / "00_circle"
    (folder / "linked.png").symlink_to(secret)
    proc = run_cli("eval", "--data", synth_copy, "--model", "timm:test_resnet", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "linked.png", "outside the dataset root")


def test_a_link_that_stays_inside_the_root_is_read(synth_copy, tmp_path):
    """Links are not refused as such: one to another image of the same root is read."""
    folder = synth_copy / "original" / "val" / "00_circle"
    first = sorted(folder.glob("*.png"))[0]
    (folder / "linked.png").symlink_to(first)
    masks = synth_copy / "fg_mask" / "val" / "00_circle"
    (masks / "linked.npy").symlink_to(masks / f"{first.stem}.npy")
    proc = run_cli("eval", "--data", synth_copy, "--model", "timm:test_resnet", "--variants", "original",
                   "--db", tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr


# -- item 3: one line for every bad model, image and concurrent export ------------------------------

def _onnx_model(path: Path, shape, metadata=None) -> Path:
    """An ONNX classifier of 9 outputs: the input's per-channel mean through a 3x9 matrix; `shape`
    is the input's (fixed ints or named dynamic dims)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    weight = numpy_helper.from_array(np.ones((3, 9), dtype=np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=0),
             helper.make_node("MatMul", ["m", "w"], ["y"])]
    axes = numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "axes")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [shape[0], 9])],
                              initializer=[weight, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    for key, value in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
    return path


def test_an_onnx_input_no_memory_holds_is_one_line(synth_root, tmp_path):
    model = _onnx_model(tmp_path / "huge.onnx", (1, 3, 100000, 100000))
    proc = run_cli("eval", "--data", synth_root, "--model", f"onnx:{model}", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "100000x100000", "8192")


def test_an_input_size_of_zero_is_one_line(synth_root, tmp_path):
    model = _onnx_model(tmp_path / "zero.onnx", ("n", 3, "h", "w"), {"input_size": "0,0"})
    proc = run_cli("eval", "--data", synth_root, "--model", f"onnx:{model}", "--resize", "native",
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "0x0", "input_size")


def test_an_hf_processor_size_no_memory_holds_is_one_line(synth_root, tmp_path):
    from helpers.foundation_models import tiny_vit
    folder = tiny_vit(tmp_path / "vit")
    config = json.loads((folder / "preprocessor_config.json").read_text())
    config["size"] = {"shortest_edge": 100000}
    (folder / "preprocessor_config.json").write_text(json.dumps(config))
    proc = run_cli("eval", "--data", synth_root, "--model", f"hf:{folder}", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "100000x100000", str(folder))


def test_an_hf_folder_whose_weights_are_a_blocked_pickle_is_one_line(synth_root, tmp_path):
    from helpers.foundation_models import tiny_vit
    folder = tiny_vit(tmp_path / "vit")
    marker = tmp_path / "marker"
    (folder / "model.safetensors").unlink()
    torch.save({"weights": _Writes(marker)}, folder / "pytorch_model.bin")
    proc = run_cli("eval", "--data", synth_root, "--model", f"hf:{folder}", "--db", tmp_path / "r.db")
    assert not marker.exists()
    assert_one_line_error(proc, f"hf:{folder}", "unpickling")


def test_an_hf_folder_whose_config_does_not_fit_its_weights_is_one_line(synth_root, tmp_path):
    from helpers.foundation_models import tiny_vit
    folder = tiny_vit(tmp_path / "vit")
    config = json.loads((folder / "config.json").read_text())
    config["hidden_size"], config["intermediate_size"] = 48, 96
    (folder / "config.json").write_text(json.dumps(config))
    proc = run_cli("eval", "--data", synth_root, "--model", f"hf:{folder}", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, f"hf:{folder}")


def _break_cache(kind: str, hf_home: Path, marker: Path) -> Path:
    """The cached weights of the hub fixture's tag made garbage, cut short, of another head, or a
    pickle (as pytorch_model.bin, the file timm falls back to) that weights_only blocks."""
    import safetensors.torch
    path = next((hf_home / "hub").rglob("model.safetensors"))
    if kind == "garbage":
        path.write_bytes(b"\x00\x01not weights" * 100)
    elif kind == "truncated":
        path.write_bytes(path.read_bytes()[:-1000])
    elif kind == "other_head":
        state = safetensors.torch.load_file(str(path))
        state = {k: (v[:10] if k.startswith("fc.") else v) for k, v in state.items()}
        safetensors.torch.save_file(state, str(path))
    elif kind == "pickle":
        path.unlink()
        torch.save({"fc.weight": _Writes(marker)}, path.with_name("pytorch_model.bin"))
        return path.with_name("pytorch_model.bin")
    return path


@pytest.mark.parametrize("kind", ["garbage", "truncated", "other_head", "pickle"])
def test_a_bad_weight_file_in_the_hub_cache_is_one_line(kind, synth_root, tmp_path, hub):
    marker = tmp_path / "marker"
    path = _break_cache(kind, tmp_path / "hf", marker)
    proc = run_cli("eval", "--data", synth_root, "--model", hub, "--db", tmp_path / "r.db")
    assert not marker.exists()
    assert_one_line_error(proc, hub, str(path))


def bomb_png(path: Path, side: int = 20000) -> Path:
    """A PNG whose header declares side x side pixels (PIL refuses it as a decompression bomb on
    opening; the few bytes of data behind the header are never reached)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)  # 8-bit grayscale
    rows = zlib.compress(b"\x00" * (side + 1) * 4)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    return path


def test_predict_names_a_decompression_bomb(tmp_path):
    bomb = bomb_png(tmp_path / "bomb.png")
    proc = run_cli("predict", "--model", "timm:test_resnet", bomb)
    assert_one_line_error(proc, str(bomb), "DecompressionBombError")


def test_predict_skips_an_unreadable_file_names_it_and_predicts_the_rest(tmp_path):
    from PIL import Image
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("a.png", "c.jpg"):
        Image.new("RGB", (40, 30), (120, 60, 200)).save(folder / name)
    (folder / "b.png").write_bytes(b"not an image")
    proc = run_cli("predict", "--model", "timm:test_resnet", folder, "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert any(line.startswith("skipped:") and str(folder / "b.png") in line for line in proc.stderr.splitlines())
    doc = json.loads(proc.stdout)
    assert [p["path"] for p in doc["images"]] == [str(folder / "a.png"), str(folder / "c.jpg")]
    assert [s["path"] for s in doc["skipped"]] == [str(folder / "b.png")]
    (folder / "a.png").write_bytes(b"")
    (folder / "c.jpg").write_bytes(b"\xff\xd8 cut short")
    assert_one_line_error(run_cli("predict", "--model", "timm:test_resnet", folder), "none of the 3 images could be read",
                          str(folder / "a.png"))


def test_eval_imagenet_names_a_decompression_bomb(tmp_path, hub):
    root = tmp_path / "imagenet"
    val = ilsvrc_val(root)
    bomb = bomb_png(val / "ILSVRC2012_val_00000002.JPEG")  # decoded by content, as real ImageNet needs
    proc = run_cli("eval", "--model", hub, "--imagenet", root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, str(bomb), "DecompressionBombError")


def test_two_scorecard_exports_into_one_folder_at_once(synth_root, tmp_path, monkeypatch):
    """The first export is held after writing its stage while a second one runs whole: each stages
    in its own folder, and the first then replaces the second's files as bgbench's own."""
    import threading

    from bgbench.reporting import export as export_module
    from bgbench.store import Store
    db = tmp_path / "r.db"
    assert run_cli("eval", "--data", synth_root, "--model", "timm:test_resnet", "--variants", "original",
                   "--db", db).returncode == 0
    out = tmp_path / "scorecard"
    real = export_module.write_scorecard
    first_wrote, second_done = threading.Event(), threading.Event()
    calls = []

    def held(data, folder):
        calls.append(folder)
        written = real(data, folder)
        if len(calls) == 1:
            first_wrote.set()
            assert second_done.wait(120)
        return written
    monkeypatch.setattr(export_module, "write_scorecard", held)
    errors = []

    def first():
        try:
            export_module.export_scorecard(Store(db), out)
        except Exception as e:  # noqa: BLE001 - the test reports it
            errors.append(e)
    thread = threading.Thread(target=first)
    thread.start()
    assert first_wrote.wait(120)
    try:
        export_module.export_scorecard(Store(db), out)
    finally:
        second_done.set()
        thread.join(120)
    assert not errors, errors
    assert calls[0] != calls[1], "both exports staged in one folder"
    assert (out / "scorecard.csv").is_file()
    listed = (out / "EXPORT_FILES.txt").read_text().splitlines()
    assert "scorecard.csv" in listed
    assert not list(tmp_path.glob(".*.partial")), "a stage was left behind"


# -- item 4: wrong or silent cases, refused or said in one line -------------------------------------

def test_an_onnx_interpolation_bgbench_does_not_have_is_refused(synth_root, tmp_path):
    """It was recorded as used while bilinear ran."""
    model = _onnx_model(tmp_path / "m.onnx", ("n", 3, "h", "w"), {"interpolation": "bogus", "input_size": "16,16"})
    proc = run_cli("eval", "--data", synth_root, "--model", f"onnx:{model}", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "'bogus'", "bilinear")


def test_an_onnx_label_space_that_does_not_fit_its_outputs_is_refused(synth_root, tmp_path):
    model = _onnx_model(tmp_path / "m.onnx", ("n", 3, "h", "w"), {"label_space": "imagenet1k"})
    proc = run_cli("eval", "--data", synth_root, "--model", f"onnx:{model}", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "imagenet1k", "9 outputs")


def test_texture_blames_data_not_stylized_for_a_data_that_is_not_imagenet(synth_root, tmp_path, hub):
    from bgbench.data.imagenet import imagenet_synsets
    stylized = tmp_path / "sin"
    _jpeg(stylized / "val" / imagenet_synsets()[1] / "ILSVRC2012_val_00000001.JPEG")
    proc = run_cli("probe", "texture", "--model", hub, "--data", synth_root, "--stylized", stylized,
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--data", str(synth_root))
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("bgbench: error:")][0]
    assert "--stylized" not in line, line


def test_renditions_name_a_stray_folder(tmp_path, hub):
    from bgbench.data.imagenet import imagenet_synsets
    root = tmp_path / "imagenet"
    ilsvrc_val(root)
    renditions = tmp_path / "imagenet-r"
    _jpeg(renditions / imagenet_synsets()[1] / "art_0.jpg")
    (renditions / "__MACOSX").mkdir()
    proc = run_cli("probe", "renditions", "--model", hub, "--data", root, "--renditions", renditions,
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "__MACOSX", "--renditions")
    assert "IN-9" not in proc.stderr


def test_an_image_listed_twice_in_the_val_solution_is_refused(tmp_path, hub):
    from bgbench.data.imagenet import imagenet_synsets
    root = tmp_path / "imagenet"
    ilsvrc_val(root)
    with open(root / "LOC_val_solution.csv", "a") as f:
        f.write(f"ILSVRC2012_val_00000001,{imagenet_synsets()[5]} 1 1 30 30\n")
    proc = run_cli("eval", "--model", hub, "--imagenet", root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "ILSVRC2012_val_00000001", "twice", "lines 2")


def test_a_watermark_class_without_a_correlation_is_refused(tmp_path):
    out = tmp_path / "s"
    proc = run_cli("synth", "--out", out, "--per-class", "2", "--size", "16", "--watermark-class", "00_circle",
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--watermark-class", "--watermark-correlation")
    assert not out.exists()


def test_integer_safetensors_weights_are_refused_not_cast(synth_root, tmp_path):
    import timm
    from safetensors.torch import save_file
    net = timm.create_model("test_resnet", num_classes=9)
    state = {k: (v * 100).to(torch.int32) if v.is_floating_point() else v for k, v in net.state_dict().items()}
    save_file(state, str(tmp_path / "int.safetensors"))
    proc = run_cli("eval", "--data", synth_root, "--model", "timm:test_resnet", "--checkpoint",
                   tmp_path / "int.safetensors", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "int32", "int.safetensors")


def test_an_operator_argument_that_is_no_pytorch_operator_is_refused(real_pt2, synth_root, tmp_path):
    """Arguments of type `as_operator` are looked up under `torch` as node targets are."""
    def edit(doc):
        node = doc["graph_module"]["graph"]["nodes"][0]
        node["inputs"].append({"name": "fn", "arg": {"as_operator": "torch.os.system"}, "kind": 1})
    crafted = edited_graph(real_pt2, tmp_path / "model.pt2", edit)
    proc = run_cli("eval", "--data", synth_root, "--model", f"file:{crafted}")
    assert_one_line_error(proc, "torch.os.system", "--trust-checkpoint")


def test_an_archive_that_holds_one_name_twice_is_refused(real_pt2, synth_root, tmp_path):
    """Which copy of a repeated name a zip reader takes is the reader's choice (Python's zipfile
    the last, miniz maybe the first, and ignoring case): the check must read what torch reads, so
    an archive with a graph, a config or any entry twice is refused."""
    import warnings
    marker = tmp_path / "marker"
    crafted = tmp_path / "model.pt2"
    with zipfile.ZipFile(real_pt2) as zin, zipfile.ZipFile(crafted, "w") as zout, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name: the point of the test
        root = zin.namelist()[0].split("/")[0]
        graph = json.loads(zin.read(f"{root}/models/model.json"))
        graph["guards_code"] = [_writes(marker)]
        zout.writestr(f"{root}/models/model.json", json.dumps(graph))  # first: the copy a check may not read
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
    proc = run_cli("eval", "--data", synth_root, "--model", f"file:{crafted}")
    assert not marker.exists()
    assert_one_line_error(proc, "models/model.json", "twice", "--trust-checkpoint")


def test_an_openclip_folder_whose_weights_are_a_blocked_pickle_is_one_line(synth_root, tmp_path):
    from helpers.foundation_models import tiny_clip
    folder = tiny_clip(tmp_path / "clip")
    marker = tmp_path / "marker"
    torch.save({"visual.proj": _Writes(marker)}, folder / "open_clip_pytorch_model.bin")
    proc = run_cli("eval", "--data", synth_root, "--model", f"openclip:local-dir:{folder}", "--db", tmp_path / "r.db")
    assert not marker.exists()
    assert_one_line_error(proc, str(folder), "unpickling")
