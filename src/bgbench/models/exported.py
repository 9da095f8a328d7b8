"""torch.export programs (`file:FILE.pt2`, written by `torch.export.save`): PyTorch's successor to
TorchScript, loaded with `torch.export.load` and run as exported.

`ExportedProgram.module()` is an ordinary callable graph, differentiable, but flat: its layers are
gone (hooks on its submodules never fire), and torch refuses its `train()`/`eval()` (the program
runs in the mode it was exported in). `ExportedNet` wraps it so a `BgModel` can hold, move and
switch it like any network: `.to(device)` moves the program's weights and constants with
torch.export's own `move_to_device_pass` (a program may hold device-specific constants that a
plain `.to` of the graph's parameters would leave behind), and a batch dimension or image size
fixed at export is met or refused (`static_shapes`).
"""
from __future__ import annotations

import contextlib
import json
import logging
import zipfile
from pathlib import Path
from typing import Optional, Tuple

import torch
from torch import nn

from ..errors import CheckpointError
from .inputs import check_input_size
from .pickles import quiet
from .pt2_guard import check_archive, weights_only_loads
from .static_shapes import in_fixed_batches, static_dims


def is_exported_program(path: Path) -> bool:
    """A PT2 archive: a zip whose `<root>/archive_format` reads 'pt2' (what `torch.export.save` writes)."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if n.endswith("/archive_format") and n.count("/") == 1]
        return bool(names) and z.read(names[0]).strip() == b"pt2"


def load_program(path: Path, trust: bool = False):
    """`torch.export.load(path)`, any failure as one line (torch logs a traceback first: muted).

    Without `trust` the archive is checked first and torch reads it with its restricted unpickler
    only (`pt2_guard`): a file from a stranger runs no code of its own, here or when it runs."""
    if not trust:
        check_archive(path)
    try:
        with quiet("torch.export", logging.CRITICAL), contextlib.nullcontext() if trust else weights_only_loads():
            program = torch.export.load(str(path))
    except Exception as e:  # noqa: BLE001 - a corrupt file, a newer schema, a missing custom op: all the file's
        raise CheckpointError(f"cannot load the torch.export program {path} with torch {torch.__version__}"
                              f"{_saved_by(path)}: {_first_line(e)}") from None
    return program


def _saved_by(path: Path) -> str:
    """' (saved by torch X)' when the archive names another torch than this one: the usual reason a
    program does not load (export's serialized schema changes between releases)."""
    try:
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if "/models/" in n and n.endswith(".json"))
            version = json.loads(z.read(name)).get("torch_version")
    except Exception:  # noqa: BLE001 - no readable record: say nothing
        return ""
    if not version or version == torch.__version__:
        return ""
    return f" (it was saved by torch {version}; load it with that version, or re-export it with this one)"


def _first_line(e: Exception) -> str:
    text = " ".join(str(e).split())
    return (text or type(e).__name__)[:200]


class ExportedNet(nn.Module):
    """An `ExportedProgram` as an `x -> logits` network on the device it is moved to.

    Attributes:
        fixed_batch: the batch size the program was exported for, or None (a dynamic batch).
        fixed_hw: the (H, W) it was exported for, or None (dynamic height and width).
        example_hw: the (H, W) of the inputs it was exported with, when the file keeps them.
    """

    def __init__(self, program, name: str = ""):
        super().__init__()
        self.__dict__["program"] = program  # not a submodule: the graph below holds its weights
        self.model_name = name
        self.graph = program.module()
        self.device = torch.device("cpu")
        shape = _input_shape(program, name)
        self.fixed_batch, self.fixed_hw = static_dims(shape)
        example = getattr(program, "example_inputs", None)
        args = example[0] if example else ()
        self.example_hw = tuple(int(d) for d in args[0].shape[-2:]) if args and args[0].ndim == 4 else None
        for hw, what in ((self.fixed_hw, "exported input"), (self.example_hw, "example input")):
            if hw is not None:  # before any forward allocates a batch of it
                check_input_size(name, hw, what)

    def num_outputs(self) -> Optional[int]:
        """The width of its (batch, classes) output, from the graph (None: only a forward tells)."""
        out = [n for n in self.program.graph.nodes if n.op == "output"][0].args[0]
        val = getattr(out[0], "meta", {}).get("val") if len(out) == 1 else None
        dims = tuple(val.shape) if val is not None else ()
        return int(dims[-1]) if len(dims) == 2 and isinstance(dims[-1], int) else None

    def train(self, mode: bool = True) -> "ExportedNet":
        """A program runs in the mode it was exported in (torch refuses to switch it): only record it."""
        self.training = mode
        return self

    def _apply(self, fn, recurse=True):
        device = fn(torch.empty(0)).device
        if device != self.device:
            from torch.export.passes import move_to_device_pass
            self.graph = move_to_device_pass(self.program, device).module()
            self.device = device
        return super()._apply(fn, recurse)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return in_fixed_batches(self.graph, x, self.fixed_batch, self.model_name, self.fixed_hw)


def _input_shape(program, name: str) -> Tuple:
    """The shape of the program's one (batch, 3, H, W) input, ints where fixed."""
    inputs = list(program.graph_signature.user_inputs)
    nodes = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    vals = [nodes[i].meta.get("val") for i in inputs if i in nodes]
    if len(vals) != 1 or not hasattr(vals[0], "shape") or len(vals[0].shape) != 4:
        shapes = ", ".join(str(tuple(getattr(v, "shape", ()))) for v in vals)
        raise CheckpointError(f"{name} takes {len(vals)} input(s) ({shapes}); bgbench feeds one (batch, 3, H, W) "
                              f"image tensor")
    return tuple(d if isinstance(d, int) else None for d in vals[0].shape)
