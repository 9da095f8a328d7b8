"""`file:PATH`: a file that holds a whole network: bgbench's own checkpoint (spec + weights), a
torch.export program (`.pt2`), an ONNX model (`.onnx`, run by the onnx: scheme), a TorchScript
archive, or a whole pickled model (only with `trust_checkpoint`). Bare weights (a state dict,
safetensors) need `timm:ARCH --checkpoint`.

A bgbench checkpoint of an openclip: or hf: model holds its image tower, its head and the
architecture's config in the spec; it is rebuilt from those, with no download and no text tower.
A network that carries no spec (export, TorchScript, pickled) gets its output width from the file
or one forward, and the normalization its label space implies, said in a warning (`--mean/--std`
or `--norm` to give it); a program
whose input size is fixed sees images at that size (`--resize native`) by default.
"""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

import torch
from torch import nn

from ..errors import CheckpointError
from .checkpoint import read_checkpoint, record_training
from .inputs import DATASET, IMAGENET1K, mark_assumed, norm_for
from .options import ModelRequest, Peek, register_scheme
from .spec import ModelSpec
from .timm_scheme import build_timm


#: spec.extra['scheme'] of the bgbench checkpoints whose network that scheme rebuilds (its `rebuild(spec, state_dict)`).
REBUILT = ("openclip", "hf")


def file_peek(request: ModelRequest) -> Peek:
    """A bgbench checkpoint's label space from its spec; an ONNX model's as the onnx: scheme tells;
    a network that carries none is unknown until it runs (export, TorchScript, a pickled model)."""
    path = file_path(request.target)
    if Path(path).suffix.lower() == ".onnx":
        from .onnx_scheme import onnx_peek
        return onnx_peek(request)
    ckpt = read_checkpoint(path, trust=request.trust_checkpoint)
    if ckpt.kind == "bgbench":
        saved = ModelSpec.from_dict(ckpt.spec)
        return Peek(saved.label_space, saved.num_classes, Path(path), format=ckpt.kind)
    return Peek(weights=Path(path), format=ckpt.kind)


@register_scheme("file", peek=file_peek, usage="file:PATH",
                 summary="a file holding a whole network: bgbench's own checkpoint, a torch.export program (.pt2), "
                         "an ONNX model (.onnx), TorchScript, or a pickled model",
                 own_weights="use either --model file:PATH or --checkpoint, not both")
def file_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """The network the file at `request.target` holds, with its spec."""
    path = file_path(request.target)
    if Path(path).suffix.lower() == ".onnx":
        from .onnx_scheme import onnx_model
        return onnx_model(request)
    ckpt = read_checkpoint(path, trust=request.trust_checkpoint)
    if ckpt.kind == "bgbench" and (ckpt.spec.get("extra") or {}).get("scheme") in REBUILT:
        from . import hf_scheme, openclip_scheme  # not at the top: they register after this scheme
        spec = ModelSpec.from_dict(ckpt.spec)
        net = {"openclip": openclip_scheme, "hf": hf_scheme}[spec.extra["scheme"]].rebuild(spec, ckpt.state_dict)
        spec.name = request.name
        record_training(spec, ckpt.extra)  # build_timm records it for the other bgbench checkpoints
    elif ckpt.kind == "bgbench":
        net, spec = build_timm(ckpt.spec["arch"], ckpt, None, request.name)
    elif ckpt.module is not None:
        net = ckpt.module.eval()
        fixed = getattr(net, "fixed_hw", None)
        if ckpt.kind == "export":
            net.model_name = request.name
        n = getattr(net, "num_outputs", lambda: None)() or _probe_classes(net, fixed or (224, 224))
        mean, std = norm_for("auto", n)
        spec = ModelSpec(name=request.name, arch=ckpt.kind, num_classes=n,
                         label_space=IMAGENET1K if n == 1000 else DATASET, mean=mean, std=std)
        mark_assumed(spec, f"a {'torch.export program' if ckpt.kind == 'export' else ckpt.kind + ' file'} carries no "
                           f"normalization")
        if fixed is not None:  # the program takes only this size: resize to it unless told otherwise
            spec.input_size, spec.resize = (3, *fixed), "native"
        elif getattr(net, "example_hw", None):  # the size it was exported at: its own, as far as it says
            spec.input_size = (3, *net.example_hw)
    else:
        raise CheckpointError(f"{path} holds bare weights with no architecture; "
                              f"use --model timm:ARCH --checkpoint {path}")
    spec.checkpoint, spec.checkpoint_sha256 = str(path), ckpt.sha256
    spec.extra["format"] = ckpt.kind
    return net, spec


def file_path(target: str) -> str:
    """The checkpoint `file:TARGET` names: a file, or the model.pt of a run folder (`bgbench train
    --out DIR` writes DIR/model.pt); a folder without one is a one-line error that says what it holds."""
    path = Path(target).expanduser()
    if path.is_dir():
        if (path / "model.pt").is_file():
            return str(path / "model.pt")
        weights = sorted(p.name for p in path.iterdir()
                         if p.suffix in (".pt", ".pth", ".bin", ".ckpt", ".pt2", ".onnx"))
        hint = (f"name one of its checkpoints, e.g. file:{path / weights[0]}" if weights else
                "a `bgbench train --out DIR` folder holds DIR/model.pt once training ends")
        raise CheckpointError(f"file:{target} is a folder without a model.pt; {hint}")
    return target


def _probe_classes(module: nn.Module, hw: Tuple[int, int] = (224, 224)) -> int:
    """The output width of a network that carries no spec, from one forward pass."""
    with torch.inference_mode():
        out = module(torch.zeros(1, 3, *hw))
    if not isinstance(out, torch.Tensor) or out.ndim != 2:
        raise CheckpointError("the model's output is not a (batch, classes) tensor")
    return int(out.shape[1])
