"""`onnx:FILE.onnx` (and `file:FILE.onnx`): an ONNX model run by onnxruntime, the way a model from
another framework (TensorFlow, JAX, a vendor's toolkit) reaches bgbench.

onnxruntime is an optional extra (`pip install 'bgbench[onnx]'`) and is imported only when such a
model is built, so `import bgbench` and `bgbench --help` never load it. The session runs on the CPU
provider, or on the CUDA provider when the job asks for `--device cuda` and onnxruntime has it.
`OnnxNet` is the session as an `x -> logits` module: torch tensors in, numpy to the session,
torch tensors back on the input's device. It runs outside autograd and has no layers, so measures
that need either refuse it (`checkpoint.check_needs`).

What the spec needs comes from the file first (onnxruntime's own `get_modelmeta()` and
`get_inputs()`/`get_outputs()`):
- input size: the input's static (H, W), which the images are resized to by default; with dynamic
  H and W, `input_size` in the metadata, else the images are fed as they are;
- normalization: `mean`/`std` in the metadata (three numbers each, for [0,1] images; `0,0,0` and
  `1,1,1` when the graph normalizes by itself), else `--mean/--std` or `--norm`; without either,
  the rule's guess by label space, said in one warning line and recorded (`inputs.mark_assumed`);
- label space: `label_space` in the metadata, else 1000 outputs are ImageNet-1k's and any other
  width the dataset's classes; `class_names` (a JSON list) names a dataset model's classes.
A `bgbench_spec` entry (a `ModelSpec.to_dict()` as JSON) supplies all of these at once.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Tuple

import numpy as np
import torch
from torch import nn

from .. import console
from ..errors import CheckpointError
from .checkpoint import in_fixed_batches, sha256_file, static_dims
from .inputs import DATASET, IMAGENET1K, INTERPOLATIONS, check_input_size, mark_assumed, norm_for
from .options import ModelRequest, Peek, register_scheme
from .spec import ModelSpec

#: onnxruntime's element types -> numpy's (what a float input may be declared as).
_FLOAT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}
#: The metadata keys read (and what `bgbench_spec` may hold instead).
META_KEYS = ("mean", "std", "input_size", "label_space", "class_names", "interpolation")


def _open(request: ModelRequest, device: str) -> Tuple[Path, object, "OnnxNet"]:
    """The ONNX file `request.target` names, its session, and the session as a network. The session
    runs on CUDA then the CPU for a CUDA job where onnxruntime has the CUDA provider, on the CPU
    provider otherwise (said on stderr when CUDA was asked for and is missing)."""
    path = Path(request.target).expanduser()
    if not path.is_file():
        raise CheckpointError(f"ONNX model not found: {path}")
    try:
        import onnxruntime as ort
    except ImportError:
        raise CheckpointError("ONNX models run with onnxruntime, an optional extra: pip install 'bgbench[onnx]'") \
            from None
    available, providers = ort.get_available_providers(), ["CPUExecutionProvider"]
    if str(device).startswith("cuda") and "CUDAExecutionProvider" in available:
        providers.insert(0, "CUDAExecutionProvider")
    elif str(device).startswith("cuda"):
        console.status(f"note: this onnxruntime has no CUDA provider (it has {', '.join(available)}); the ONNX "
                       f"model runs on the CPU provider (install onnxruntime-gpu for CUDA)")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings are about graph optimisation, not the user
    try:
        session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own Fail/InvalidGraph/... classes
        raise CheckpointError(f"cannot load ONNX model {path}: {' '.join(str(e).split())[:200]}") from None
    return path, session, OnnxNet(session, request.name)


class OnnxNet(nn.Module):
    """An onnxruntime session as an `x -> logits` module (no parameters, no gradients).

    Attributes:
        fixed_batch, fixed_hw: the batch size and (H, W) the model's input fixes (None: dynamic).
    """

    def __init__(self, session, name: str):
        super().__init__()
        self.__dict__["session"] = session  # not a module: nothing of it moves with `.to()`
        self.model_name = name
        inputs = session.get_inputs()
        if len(inputs) != 1 or len(inputs[0].shape) != 4 or inputs[0].shape[1] not in (3, "3"):
            shapes = ", ".join(f"{i.name} {i.shape}" for i in inputs)
            raise CheckpointError(f"{name} takes {shapes}; bgbench feeds one (batch, 3, H, W) image tensor")
        if inputs[0].type not in _FLOAT_TYPES:
            raise CheckpointError(f"{name}'s input is {inputs[0].type}; bgbench feeds float images")
        self.input_name, self.input_dtype = inputs[0].name, _FLOAT_TYPES[inputs[0].type]
        self.fixed_batch, self.fixed_hw = static_dims(inputs[0].shape)
        if self.fixed_hw is not None:  # before any forward allocates a batch of it
            check_input_size(name, self.fixed_hw, "ONNX input")

    def num_outputs(self) -> Optional[int]:
        """The width of its first output, when the file fixes it."""
        shape = self.session.get_outputs()[0].shape
        return int(shape[-1]) if len(shape) == 2 and isinstance(shape[-1], int) else None

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        array = x.detach().to("cpu", torch.float32).contiguous().numpy().astype(self.input_dtype, copy=False)
        out = self.session.run(None, {self.input_name: array})[0]
        return torch.from_numpy(np.asarray(out, dtype=np.float32)).to(x.device, x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return in_fixed_batches(self._run, x, self.fixed_batch, self.model_name, self.fixed_hw)


def model_metadata(session) -> dict:
    """The spec's fields the model's metadata gives (`META_KEYS`, or a `bgbench_spec`), parsed."""
    meta = dict(session.get_modelmeta().custom_metadata_map or {})
    found = {}
    if "bgbench_spec" in meta:
        try:
            saved = json.loads(meta["bgbench_spec"])
        except ValueError:
            raise CheckpointError("the ONNX model's bgbench_spec metadata is not JSON") from None
        found.update({k: saved[k] for k in META_KEYS if saved.get(k) is not None})
    found.update({key: _parse(key, meta[key]) for key in META_KEYS if key in meta})
    return found


def _parse(key: str, text: str):
    """A metadata value: JSON ('[0.5, 0.5, 0.5]'), or numbers separated by commas or spaces."""
    if key in ("label_space", "interpolation"):
        return text.strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = text.split(",") if key == "class_names" else text.replace(",", " ").split()
    if key == "class_names":
        return [str(v).strip() for v in value] if isinstance(value, list) else None
    try:
        value = [float(v) for v in (value if isinstance(value, list) else [value])]
    except (TypeError, ValueError):
        raise CheckpointError(f"the ONNX model's {key} metadata must be numbers, not {text!r}") from None
    if key in ("mean", "std") and len(value) != 3:
        raise CheckpointError(f"the ONNX model's {key} metadata must be three numbers, not {text!r}")
    return value


def onnx_peek(request: ModelRequest) -> Peek:
    """Label space and width from the file (a session is opened; no image runs unless the width is dynamic)."""
    path, session, net = _open(request, "cpu")
    n = net.num_outputs()
    space = checked_label_space(model_metadata(session).get("label_space"), n, request.name)
    return Peek(space, n, path, format="onnx")


@register_scheme("onnx", peek=onnx_peek, usage="onnx:FILE.onnx",
                 summary="an ONNX model run by onnxruntime (CPU; CUDA with --device cuda): preprocessing and "
                         "label space from its metadata, else from flags",
                 own_weights="an ONNX model carries its own weights; drop --checkpoint")
def onnx_model(request: ModelRequest) -> Tuple[nn.Module, ModelSpec]:
    """The ONNX model at `request.target` in an onnxruntime session, with its spec."""
    path, session, net = _open(request, request.device)
    meta = model_metadata(session)
    n = net.num_outputs() or _forward_width(net)
    label_space = checked_label_space(meta.get("label_space"), n, request.name)
    mean, std = (meta["mean"], meta["std"]) if "mean" in meta and "std" in meta else norm_for("auto", n)
    spec = ModelSpec(name=request.name, arch="onnx", num_classes=n, label_space=label_space,
                     mean=tuple(float(v) for v in mean), std=tuple(float(v) for v in std),
                     checkpoint=str(path), checkpoint_sha256=sha256_file(path))
    if net.fixed_hw is not None:  # the file fixes the size: resize to it unless told otherwise
        spec.input_size, spec.resize = (3, *net.fixed_hw), "native"
    elif meta.get("input_size"):
        spec.input_size = (3, *check_input_size(request.name, meta["input_size"][-2:], "input_size metadata"))
    if meta.get("interpolation") and meta["interpolation"] not in INTERPOLATIONS:
        # refused: the resize would run bilinear while the spec recorded the unknown name as used
        raise CheckpointError(f"{request.name}: its interpolation metadata is {meta['interpolation']!r}; bgbench "
                              f"resizes with {', '.join(INTERPOLATIONS)}")
    spec.interpolation = str(meta.get("interpolation") or spec.interpolation)
    if meta.get("class_names") and label_space == DATASET:
        spec.class_names = tuple(str(c) for c in meta["class_names"])
    spec.extra = {"format": "onnx", "onnx": _provenance(session, path, meta)}
    if "mean" not in meta or "std" not in meta:
        mark_assumed(spec, "its ONNX metadata has no mean/std")
    return net, spec


def checked_label_space(declared: Optional[str], n: Optional[int], name: str) -> Optional[str]:
    """The label space the metadata declares (checked against the output width), else the width's:
    ImageNet-1k's for 1000 outputs, the dataset's for any other. None: neither is known."""
    if not declared:
        return None if n is None else IMAGENET1K if n == 1000 else DATASET
    if declared not in (IMAGENET1K, DATASET):
        raise CheckpointError(f"the ONNX model's label_space metadata is {declared!r}; it must be "
                              f"{IMAGENET1K} or {DATASET}")
    if declared == IMAGENET1K and n is not None and n != 1000:
        raise CheckpointError(f"{name}: its label_space metadata says {IMAGENET1K}, but it has {n} outputs, not "
                              f"ImageNet-1k's 1000; fix the metadata (label_space=dataset)")
    return declared


def _forward_width(net: OnnxNet) -> int:
    """The output width of a model whose file leaves it dynamic: one forward of a black image."""
    h, w = net.fixed_hw or (224, 224)
    out = net(torch.zeros(net.fixed_batch or 1, 3, h, w))
    if out.ndim != 2:
        raise CheckpointError(f"{net.model_name}'s output has shape {tuple(out.shape)}, not (batch, classes)")
    return int(out.shape[1])


def _provenance(session, path: Path, meta: dict) -> dict:
    """How the model ran: onnxruntime's version and providers, the opsets, who produced the file."""
    import onnxruntime
    info = session.get_modelmeta()
    return {"onnxruntime": onnxruntime.__version__, "providers": list(session.get_providers()),
            "opset": _opsets(path), "producer": info.producer_name or None, "graph": info.graph_name or None,
            "input": [session.get_inputs()[0].name, list(session.get_inputs()[0].shape)],
            "metadata": sorted(meta)}


def _opsets(path: Path) -> Optional[dict]:
    """The file's opset imports {domain: version} ('' is the default ONNX domain), read with the onnx
    package when it is installed (onnxruntime does not expose them); None without it."""
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path), load_external_data=False)
    return {imp.domain: int(imp.version) for imp in model.opset_import}
