"""Reading checkpoints in the formats users actually have.

Formats, told apart by content (`formats.FORMATS` says what each can do):
- safetensors (`safetensors.torch.save_file`; what timm, open_clip and the hub prefer): a state
  dict, read by the safetensors library, which unpickles nothing;
- torch.export programs (`torch.export.save`, `.pt2`): loaded by `exported.load_program`;
- TorchScript archives (`torch.jit.save`): read for existing files only (PyTorch deprecates them);
- bgbench checkpoints: {'bgbench_spec': {...}, 'state_dict': {...}};
- the robustness-library format used upstream: {'model' | 'state_dict': {...}, 'epoch': N} with
  keys `module.model.*`, `module.normalizer.*` and possibly `module.attacker.*`;
- a plain state_dict;
- a whole pickled nn.Module, only with trust=True (`--trust-checkpoint`).

ONNX models are not read here: they run in onnxruntime (`onnx_scheme`), and a `.onnx` file met
here is sent there. Pickles are read with `torch.load(weights_only=True)`; a file that is none of
these formats is one line that names them. `save_checkpoint` writes the bgbench format, which that
reading accepts, so the writer and its reader live side by side.
"""
from __future__ import annotations

import hashlib
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn

from ..errors import CheckpointError
from .pickles import unpickling_reason
from .spec import BgModel


@dataclass
class LoadedCheckpoint:
    """What a checkpoint file held, normalized across formats."""

    kind: str  # 'safetensors' | 'export' | 'torchscript' | 'bgbench' | 'robustness' | 'state_dict' | 'pickled'
    state_dict: Optional[Dict[str, torch.Tensor]] = None
    module: Optional[nn.Module] = None
    spec: Optional[dict] = None  # bgbench spec, when present
    mean: Optional[Tuple[float, ...]] = None  # from a robustness normalizer
    std: Optional[Tuple[float, ...]] = None
    sha256: str = ""
    extra: Optional[dict] = None
    path: str = ""


def save_checkpoint(model: BgModel, path: str | Path, **extra) -> None:
    """A bgbench checkpoint: plain tensors plus the model spec, loadable with weights_only=True.

    `extra` entries (epoch, config, ...) must be plain values too, or the file needs full unpickling.
    """
    torch.save({"bgbench_spec": model.spec.to_dict(), "state_dict": model.net.state_dict(), **extra}, path)


def record_training(spec, saved: Optional[dict]) -> None:
    """Record as `spec.extra['trained']` how bgbench trained a checkpoint, from what `bgbench train`
    saved in it (its config) or a last-layer recipe did (its name), when either did: recorded with
    every run of the model, so that a report names the recipe even where the training run is in
    another store."""
    saved = saved or {}
    config = saved.get("config") if isinstance(saved.get("config"), dict) else {}
    recipe = config.get("recipe", saved.get("recipe"))
    if isinstance(recipe, str):
        spec.extra["trained"] = {"recipe": recipe, **{k: config[k] for k in ("variant", "swa", "epochs", "seed")
                                                      if isinstance(config.get(k), (str, int, bool))}}


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def tensors_sha256(state_dict: Dict[str, torch.Tensor]) -> str:
    """sha256 over a state dict's tensors (name, dtype, shape and bytes, in name order).

    Weights that come from a hub or a folder of several files (open_clip tags, Hugging Face repos)
    have no single file to hash; this digest names the weights themselves, whatever file, format or
    place they were read from.
    """
    h = hashlib.sha256()
    for key in sorted(state_dict):
        t = state_dict[key].detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _zip_names(path: Path) -> List[str]:
    """The entries of a zip file ([] for any other file)."""
    if not zipfile.is_zipfile(path):
        return []
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def _strip_prefix(sd: Dict[str, torch.Tensor], prefix: str) -> Dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}


def _unwrapped(sd: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """`sd` without DataParallel's 'module.' prefix, when every key has it."""
    return _strip_prefix(sd, "module.") if all(k.startswith("module.") for k in sd) else sd


def _is_state_dict(obj) -> bool:
    return isinstance(obj, dict) and len(obj) > 0 and all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())


def _normalizer(t: Optional[torch.Tensor]) -> Optional[tuple]:
    """A robustness normalizer's mean or std, as numbers."""
    return None if t is None else tuple(float(v) for v in t.flatten())


def read_checkpoint(path: str | Path, trust: bool = False) -> LoadedCheckpoint:
    """Read `path` in any supported format (see module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    if path.suffix.lower() == ".onnx":
        raise CheckpointError(f"{path} is an ONNX model, which runs in onnxruntime as a whole: use --model "
                              f"onnx:{path}")
    digest = sha256_file(path)
    with open(path, "rb") as f:
        head = f.read(9)
    # the safetensors layout: an 8-byte little-endian header length, then the JSON header ('{')
    if len(head) == 9 and head[8:9] == b"{" and 8 + int.from_bytes(head[:8], "little") <= path.stat().st_size:
        import safetensors.torch
        try:
            state_dict = safetensors.torch.load_file(str(path), device="cpu")
        except (safetensors.SafetensorError, OSError, ValueError) as e:
            raise CheckpointError(f"cannot read safetensors file {path}: {' '.join(str(e).split())[:200]}") from None
        return LoadedCheckpoint(kind="safetensors", state_dict=_unwrapped(state_dict), sha256=digest, path=str(path))
    from .exported import ExportedNet, is_exported_program, load_program
    if is_exported_program(path):
        return LoadedCheckpoint(kind="export", module=ExportedNet(load_program(path, trust), name=str(path)),
                                sha256=digest, path=str(path))
    names = _zip_names(path)
    if any(n.endswith("constants.pkl") or "/code/" in n for n in names):  # TorchScript
        try:
            with warnings.catch_warnings():  # torch >= 2.9 deprecates TorchScript loudly, on every load
                warnings.filterwarnings("ignore", message=r".*torch\.jit\.load.* is deprecated", category=FutureWarning)
                module = torch.jit.load(str(path), map_location="cpu")
        except Exception as e:  # noqa: BLE001 - any failure here is a bad file
            raise CheckpointError(f"cannot load TorchScript checkpoint {path}: {e}") from None
        return LoadedCheckpoint(kind="torchscript", module=module, sha256=digest, path=str(path))
    # what `torch.load` reads: a zip holding `<root>/data.pkl`, or a legacy pickle stream (0x80)
    if not (any(n.endswith("data.pkl") for n in names) if names else head[:1] == b"\x80"):
        raise CheckpointError(f"{path} is in no format bgbench reads; it reads safetensors, a PyTorch checkpoint or "
                              f"state dict (torch.save), a torch.export program (.pt2), TorchScript, or an ONNX model "
                              f"(.onnx, run as onnx:PATH)")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001
        if not trust:
            raise CheckpointError(
                f"{path} needs full unpickling to load ({unpickling_reason(e)}); "
                f"pass --trust-checkpoint only if you trust its source") from None
        try:
            obj = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as e2:  # noqa: BLE001
            raise CheckpointError(f"cannot read checkpoint {path}: {e2}") from None
    if isinstance(obj, nn.Module):
        if not trust:  # only reachable for modules allow-listed by torch; be explicit anyway
            raise CheckpointError(f"{path} holds a whole pickled model; pass --trust-checkpoint to load it")
        return LoadedCheckpoint(kind="pickled", module=obj, sha256=digest, path=str(path))
    if isinstance(obj, dict) and "bgbench_spec" in obj:
        return LoadedCheckpoint(kind="bgbench", state_dict=obj["state_dict"], spec=obj["bgbench_spec"],
                                sha256=digest, path=str(path),
                                extra={k: v for k, v in obj.items() if k not in ("state_dict",)})
    if isinstance(obj, dict) and ("model" in obj or "state_dict" in obj) and not _is_state_dict(obj):
        sd = obj.get("model", obj.get("state_dict"))
        if not _is_state_dict(sd):
            raise CheckpointError(f"{path}: '{'model' if 'model' in obj else 'state_dict'}' entry is not a state_dict")
        if any(k.startswith(("module.model.", "model.")) for k in sd):
            sd = _unwrapped(sd)
            return LoadedCheckpoint(kind="robustness", state_dict=_strip_prefix(sd, "model."),
                                    mean=_normalizer(sd.get("normalizer.new_mean")),
                                    std=_normalizer(sd.get("normalizer.new_std")), sha256=digest, path=str(path))
        obj = sd  # a plain state dict under its 'model' or 'state_dict' key
    if _is_state_dict(obj):
        return LoadedCheckpoint(kind="state_dict", state_dict=_unwrapped(obj), sha256=digest, path=str(path))
    raise CheckpointError(f"{path}: unrecognised checkpoint content ({type(obj).__name__})")
