"""Model file formats: what each one is, what it can do, and the one check of a model against a job.

A model file is read in one of these formats (`checkpoint.read_checkpoint`, the ONNX scheme); the
spec records which (`spec.extra['format']`), so a run's provenance says how the model was run. The
formats differ in what a job can do with the network beyond a forward pass:

- eager PyTorch modules (timm networks from any weights file, transformers and open_clip models,
  bgbench checkpoints) have layers to hook and differentiate: Grad-CAM and penultimate features work;
- TorchScript archives and torch.export programs are differentiable graphs whose layers are gone
  (hooks on their submodules never fire, and they have no `forward_features`);
- ONNX models run in onnxruntime, outside autograd: forwards only.

Measures declare what they need (`Measure.needs`, e.g. 'layers'); `check_needs` refuses a model
that cannot give it, in one line that says why and what to hand over instead. No torch here:
`bgbench models --schemes` lists the formats from this table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from ..errors import BgbenchError

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
