"""Model files: the formats bgbench reads, what each can do, and the one reader of them all.

Formats, told apart by content (`FORMATS` says what each can do; the spec records which one a model
was read in, `spec.extra['format']`, so a run's provenance says how the model was run):
- safetensors (`safetensors.torch.save_file`; what timm, open_clip and the hub prefer): a state
  dict, read by the safetensors library, which unpickles nothing;
- torch.export programs (`torch.export.save`, `.pt2`): PyTorch's successor to TorchScript, loaded
  with `torch.export.load` (a stranger's archive checked first: `pt2_guard`) and run as exported;
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

The formats differ in what a job can do with the network beyond a forward pass:
- eager PyTorch modules (timm networks from any weights file, transformers and open_clip models,
  bgbench checkpoints) have layers to hook and differentiate: Grad-CAM and penultimate features work;
- TorchScript archives and torch.export programs are differentiable graphs whose layers are gone
  (hooks on their submodules never fire, and they have no `forward_features`);
- ONNX models run in onnxruntime, outside autograd: forwards only.
Measures declare what they need (`Measure.needs`, e.g. 'layers'); `check_needs` refuses a model
that cannot give it, in one line that says why and what to hand over instead.

Networks whose input shape is fixed in the file (ONNX models, torch.export programs exported
without dynamic shapes) meet bgbench's batches, which vary in size (the last one is short, the
challenge's composites come in any number), in chunks of exactly that size, the last one padded by
repeating its last image (an eval-mode classifier scores each image on its own, so the padding
changes no other image's logits). A fixed image size cannot be met that way: `check_size` says so
in one line before a job runs, and the wrappers refuse such a forward the same way.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ..errors import BgbenchError, CheckpointError
from .inputs import check_input_size
from .pt2_guard import check_archive, unpickling_reason, weights_only_loads

#: What to hand over instead, by need.
INSTEAD = {
    "layers": "the eager weights instead: timm:ARCH --checkpoint FILE.safetensors (or .pt), a bgbench checkpoint "
              "(file:model.pt) or a Hugging Face folder (hf:DIR)",
    "gradients": "a model PyTorch runs instead: a torch.export program (file:FILE.pt2) or the eager weights "
                 "(timm:ARCH --checkpoint FILE.safetensors, file:model.pt)",
}


@dataclass(frozen=True)
class Format:
    """One way a model reaches bgbench.

    Attributes:
        name: what the spec records as `extra['format']`.
        schemes: the schemes that read it (`bgbench models --schemes` lists it under each).
        summary: what the file is and how it is named, for `bgbench models --schemes`.
        layers: the network has layers that can be hooked and read (Grad-CAM, penultimate features).
        gradients: its forward is differentiable (an adversarial edit ascends the loss through it).
        why: why it has neither layers nor gradients, when it lacks one (for the refusal).
    """

    name: str
    schemes: Tuple[str, ...]
    summary: str
    layers: bool = True
    gradients: bool = True
    why: str = ""


FORMATS: Dict[str, Format] = {f.name: f for f in (
    Format("safetensors", ("timm",), "timm:ARCH --checkpoint FILE.safetensors: weights read without unpickling "
                                     "(what timm and the hub share; hf:DIR folders hold them too)"),
    Format("state_dict", ("timm",), "timm:ARCH --checkpoint FILE.pt|.pth|.bin: a plain state dict, read with "
                                    "torch.load(weights_only=True)"),
    Format("robustness", ("timm",), "timm:ARCH --checkpoint FILE.pt: the robustness library's checkpoint (IN-9's "
                                    "published models), its normalizer read as mean and std"),
    Format("bgbench", ("file", "timm"), "file:model.pt: bgbench's own checkpoint (spec + state dict), as "
                                        "`bgbench train` writes it"),
    Format("export", ("file",), "file:FILE.pt2: a torch.export program (torch.export.save), run as exported",
           layers=False, why="a torch.export program is a flat graph whose layers are gone"),
    Format("onnx", ("onnx", "file"), "onnx:FILE.onnx or file:FILE.onnx: run by onnxruntime (pip install "
                                     "'bgbench[onnx]'; CPU, or CUDA with --device cuda)",
           layers=False, gradients=False,
           why="an ONNX model runs in onnxruntime, outside PyTorch, with no layers to hook and no gradients"),
    Format("torchscript", ("file",), "file:FILE.pt: a TorchScript archive (torch.jit.save), read for existing "
                                     "files only (PyTorch deprecates TorchScript: hand over a .pt2 or safetensors)",
           layers=False, why="a TorchScript archive hides its layers from hooks"),
    Format("pickled", ("file",), "file:FILE.pt --trust-checkpoint: a whole pickled nn.Module (runs code from the "
                                 "file)"),
    Format("transformers", ("hf",), "hf:REPO_OR_DIR: a transformers image classifier (config.json + "
                                    "model.safetensors)"),
    Format("open_clip", ("openclip",), "openclip:ARCH[@PRETRAINED]: an open_clip image tower with a zero-shot head"),
    Format("random", ("timm",), "timm:ARCH alone: a seeded random init (no file)"),
)}


def format_of(spec) -> Format:
    """The format a spec records (a model built outside the schemes counts as an eager module)."""
    name = (getattr(spec, "extra", None) or {}).get("format")
    return FORMATS.get(name) or Format(name or "module", (), "an eager PyTorch module")


def formats_of(scheme: str) -> List[Format]:
    """The formats scheme `scheme` reads."""
    return [f for f in FORMATS.values() if scheme in f.schemes]


def can_do(fmt: Format) -> str:
    """What a job can do with a model of this format, in a few words."""
    if fmt.layers:
        return "every measure"
    return "forwards and gradients (no layers)" if fmt.gradients else "forwards only"


#: The needs a model's format answers, each a `Format` attribute, and what it is for (the other
#: needs, masks or an eval run, are the data's or the store's).
CAPABILITIES = {"layers": "hooks the network's layers (Grad-CAM, penultimate features)",
                "gradients": "differentiates through the network"}


def needs_problem(fmt: Format, needs: Iterable[str], who: str, model_name: str) -> Optional[str]:
    """Why a model of format `fmt` cannot give what `who` (a measure, or a job) needs: 'layers'
    (hooks and penultimate features) or 'gradients'; None when it can. Other needs pass."""
    for need in needs:
        if need in CAPABILITIES and not getattr(fmt, need):
            return (f"{who} {CAPABILITIES[need]}, which {model_name} cannot give ({fmt.why}); hand over "
                    f"{INSTEAD[need]}")
    return None


def check_needs(model, needs: Iterable[str], who: str) -> None:
    """Refuse, in one line, a built model whose format cannot give what `who` needs (`needs_problem`):
    where a probe's model meets its measure (`api.probe`), and the adversarial edit's."""
    problem = needs_problem(format_of(model.spec), needs, who, model.spec.name)
    if problem is not None:
        raise BgbenchError(problem)


def weights_failure(error: Exception) -> str:
    """Why a weight file would not load, in a few words: torch's refusal of a pickle (the global it
    names), a size mismatch, or the library's first line."""
    import pickle
    if isinstance(error, pickle.UnpicklingError) or "Weights only load failed" in str(error):
        return f"it needs full unpickling ({unpickling_reason(error)})"
    text = " ".join(str(error).split())
    if "size mismatch" in text:
        text = text[text.index("size mismatch"):]
    return (text or type(error).__name__)[:200]


def first_line(error: Exception) -> str:
    """The first line of a library's error (its type's name when it says nothing), at most 200 characters."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


@contextlib.contextmanager
def quiet(logger: str = "", level: int = logging.ERROR):
    """Keep stderr for bgbench: inside, `logger` (the root logger by default, which open_clip logs
    through: a warning for every random init) says nothing below `level`."""
    log = logging.getLogger(logger)
    saved = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(saved)


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


def save_checkpoint(model, path: str | Path, **extra) -> None:
    """A bgbench checkpoint of a `BgModel`: plain tensors plus the model spec, loadable with weights_only=True.

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
                              f"{_saved_by(path)}: {_one_line(e)}") from None
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


def _one_line(e: Exception) -> str:
    text = " ".join(str(e).split())
    return (text or type(e).__name__)[:200]


class ExportedNet(nn.Module):
    """An `ExportedProgram` as an `x -> logits` network on the device it is moved to.

    `ExportedProgram.module()` is an ordinary callable graph, differentiable, but flat, and torch
    refuses its `train()`/`eval()` (the program runs in the mode it was exported in). This wraps it
    so a `BgModel` can hold, move and switch it like any network: `.to(device)` moves the program's
    weights and constants with torch.export's own `move_to_device_pass` (a program may hold
    device-specific constants that a plain `.to` of the graph's parameters would leave behind).

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


def static_dims(shape: Sequence) -> Tuple[Optional[int], Optional[Tuple[int, int]]]:
    """(batch, (H, W)) of an input shape (N, C, H, W) whose entries are ints where fixed, anything
    else (a name, None, a symbol) where dynamic; None for the parts that are not fixed."""
    batch, h, w = (int(d) if isinstance(d, int) and not isinstance(d, bool) and d > 0 else None
                   for d in (shape[0], shape[2], shape[3]))
    return batch, ((h, w) if h is not None and w is not None else None)


def in_fixed_batches(run: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, batch: Optional[int],
                     name: str, fixed_hw: Optional[Tuple[int, int]]) -> torch.Tensor:
    """`run(x)`, for a network that takes only batches of `batch` images (None: any number) of
    `fixed_hw` (None: any size; another size is refused in one line, as `check_size` says)."""
    check_size(name, fixed_hw, x.shape[-2:])
    if batch is None or x.shape[0] == batch:
        return run(x)
    outs = []
    for chunk in x.split(batch):
        short = batch - chunk.shape[0]
        if short:
            chunk = torch.cat([chunk, chunk[-1:].expand(short, *chunk.shape[1:])])
        outs.append(run(chunk)[:batch - short])
    return torch.cat(outs)


def check_size(name: str, fixed_hw: Optional[Tuple[int, int]], fed_hw: Tuple[int, int]) -> None:
    """Refuse in one line to feed `fed_hw` images to a network whose file fixes its input to
    `fixed_hw` (the runtime's own error is pages long); None: any size."""
    if fixed_hw is not None and tuple(fed_hw) != tuple(fixed_hw):
        raise BgbenchError(f"{name} takes only {fixed_hw[0]}x{fixed_hw[1]} images (its file fixes the input shape) "
                           f"but would be fed {fed_hw[0]}x{fed_hw[1]}; drop --resize none (--resize native resizes "
                           f"them to its size), or export it with dynamic height and width")
