"""Hostile model files and trees, as an attacker or a careless user would hand them over (issue 44).

The crafted `.pt2` files start from a real `torch.export.save` archive of a tiny network and change
one entry: a weight marked `use_pickle` and replaced by a pickle whose `__reduce__` writes a marker
file, the example inputs replaced by such a pickle, a guard or a shape expression that Python would
evaluate, a node that calls something else than a PyTorch operator. Each is handed to every door a
model comes in by (`--model file:`, `--checkpoint`, a study's `--dry-run`), and the marker must never
appear. Each test failed before its fix.
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
