"""Model specs: everything needed to feed a model [0,1] images and read its outputs."""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Tuple

import torch
from torch import nn

from ..class_maps import IN9, ClassMap, resolve_class_map
from ..classes import class_name_mismatch
from ..console import status
from ..errors import BgbenchError
from .checkpoint import check_size, format_of
from .inputs import DATASET, IMAGENET1K, IN9_MEAN, IN9_STD, fit_to_native, native_hw, size_note


@dataclass
class ModelSpec:
    """What a model is and how it expects its input.

    Attributes:
        name: the model string the user gave ('timm:resnet18', 'zoo:efficientnet_lite0', ...).
        arch: architecture name (a timm name; 'export', 'onnx', 'torchscript' or 'pickled' for a file that
            holds its own network).
        num_classes: width of the output layer.
        label_space: 'imagenet1k' (mapped to IN-9 by a decision mapping) or 'dataset'
            (output i is the dataset's i-th class folder).
        mean, std: normalization applied inside the wrapper, so callers pass [0,1] images.
        input_size: (C, H, W) the weights were trained at (the model's native input size).
        resize: how images meet `input_size` (`models.inputs`): 'none' feeds them at their own size,
            'native' resizes them inside the wrapper. Recorded, so no run resizes silently.
        interpolation: the interpolation of 'native' resizing (the model's own preprocessing's).
        class_names: the training classes for 'dataset' models, when known.
        checkpoint: path (or hub id, or pretrained tag) of the weights, if any, and their sha256.
        extra: scheme-specific provenance (open_clip's zero-shot head, a Hugging Face processor, ...) and
            `format`, how the model was read (`models.checkpoint`: what it can do follows from it).
    """

    name: str
    arch: str
    num_classes: int
    label_space: str = DATASET
    mean: Tuple[float, float, float] = IN9_MEAN
    std: Tuple[float, float, float] = IN9_STD
    input_size: Tuple[int, int, int] = (3, 224, 224)
    resize: str = "none"
    interpolation: str = "bilinear"
    class_names: Optional[Tuple[str, ...]] = None
    checkpoint: Optional[str] = None
    checkpoint_sha256: Optional[str] = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelSpec":
        known = {f.name for f in dataclasses.fields(cls)}
        tuples = ("mean", "std", "input_size", "class_names")  # JSON gives lists
        return cls(**{k: tuple(v) if k in tuples and v is not None else v for k, v in d.items() if k in known})


class Normalize(nn.Module):
    """(x - mean) / std over channels, as a module so it travels with the model."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class BgModel(nn.Module):
    """A classifier that takes [0,1] images: normalization lives here, not in the data pipeline."""

    def __init__(self, net: nn.Module, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        self.normalize = Normalize(spec.mean, spec.std)
        self.net = net
        #: how a 1000-class model's outputs become the current dataset's labels, set by
        #: `check_compatible` for each job (None: IN-9's table; unused by dataset-class models)
        self.class_map: Optional[ClassMap] = None
        #: the `--class-map` file the model was asked for with (`models.options`), which every job
        #: resolves against its dataset's classes
        self.class_map_file: Optional[str] = None
        #: how it was built, as far as that changes its numbers (`models.options.identity`): what a
        #: run records and a study compares; None for a model built outside the one door
        self.identity: Optional[dict] = None
        #: what the last job fed it (`meet`): the images' size, the model's, and what was done
        self.input_record: Optional[dict] = None
        #: the forward options applied ('channels_last', 'compile'), recorded with a run
        self.speedups: list = []
        #: whether forward runs the compiled network (`compile_net`; off inside `eager`)
        self._use_compiled = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.spec.resize == "native":
            x = fit_to_native(x, self.spec.input_size, self.spec.interpolation)
        net = self._compiled_net if self._use_compiled else self.net
        return net(self.normalize(x))

    def channels_last(self) -> "BgModel":
        """Store the network's weights channels-last (NHWC). Its inputs already are (`to_tensor`
        permutes NHWC images), so convolutions need no layout change; fp32 results may differ in
        the last bits, as any other convolution algorithm's would."""
        self.net.to(memory_format=torch.channels_last)
        self.speedups = sorted({*self.speedups, "channels_last"})
        return self

    def compile_net(self, **options) -> "BgModel":
        """`torch.compile` the network for this model's forward. The eager network stays `self.net`:
        its state_dict, its head and the layer hooks of Grad-CAM (which a compiled graph would not
        call: see `eager`) keep working on it. The compiled one is kept outside the module tree,
        so it adds no parameters and no state_dict keys; it shares the network's own."""
        self.__dict__["_compiled_net"] = torch.compile(self.net, **options)
        self._use_compiled = True
        self.speedups = sorted({*self.speedups, "compile"})
        return self

    @contextlib.contextmanager
    def eager(self):
        """Run the eager network inside this block, for work that hooks its layers (Grad-CAM)."""
        used, self._use_compiled = self._use_compiled, False
        try:
            yield self
        finally:
            self._use_compiled = used

    def net_input_hw(self, image_hw: Tuple[int, int]) -> Tuple[int, int]:
        """The (H, W) the network itself receives for images of `image_hw` (after any resize)."""
        return native_hw(self.spec.input_size) if self.spec.resize == "native" else tuple(image_hw)

    def meet(self, layout, labels: bool = True, protocol: Optional[str] = None) -> None:
        """What every job does first with its model and its data (a `data.layout.Layout`): the label
        spaces must fit (`check_compatible`, with the model's `--class-map` file; `labels=False` for
        jobs that read features, not decisions), a network whose file fixes its input size must be fed
        that size, and the size of the images against the model's input size is said on stderr (once,
        by the main process) and kept in `input_record`, which the run records
        (`provenance.Provenance.of`); a --protocol's settings must be the model's
        (`protocols.check_spec`). A method, so that a measure meets its data without importing the
        model layer."""
        from ..distributed import launched
        if labels:
            check_compatible(self, layout.classes)
        image_hw = layout.image_hw()
        if image_hw is not None:
            # a file that fixes its input size, fed another (--resize none)
            check_size(self.spec.name, getattr(self.net, "fixed_hw", None), self.net_input_hw(image_hw))
            note = note_input_size(self, image_hw)
            if note and launched().main:
                status(note)
        if protocol is not None:
            from ..protocols import check_spec
            check_spec(protocol, self.spec.to_dict())

    @property
    def format(self) -> str:
        """How the model was read ('safetensors', 'export', 'onnx', 'torchscript', ...: `models.checkpoint`)."""
        return format_of(self.spec).name

    @property
    def has_layers(self) -> bool:
        """Whether its network has layers to hook and read (Grad-CAM, penultimate features)."""
        return format_of(self.spec).layers


def note_input_size(model: BgModel, image_hw: Tuple[int, int]) -> Optional[str]:
    """Record what the model is fed for images of `image_hw` and return the line to say (None:
    nothing to say, the sizes agree or the network has random weights and no size of its own)."""
    spec = model.spec
    target = native_hw(spec.input_size)
    image_hw = (int(image_hw[0]), int(image_hw[1]))
    model.input_record = {"images": list(image_hw), "model": list(target), "resize": spec.resize,
                          "fed": list(model.net_input_hw(image_hw))}
    if spec.resize == "native" and image_hw != target:
        model.input_record["interpolation"] = spec.interpolation
    return size_note(spec.name, spec.input_size, spec.resize, image_hw,
                     random_init="init_seed" in (spec.extra or {}), interpolation=spec.interpolation)


def compatibility_problem(name: str, label_space: str, num_classes: int, classes: Sequence[str],
                          class_map: "str | Path | ClassMap | None" = None) -> Optional[str]:
    """Why a model with this label space cannot read a dataset with these classes (None: it can),
    without building anything: what `check_compatible` refuses, for a study's plan too."""
    if label_space == IMAGENET1K:
        try:
            resolved = resolve_class_map(classes, class_map)
        except BgbenchError as e:
            return str(e)
        if resolved is None:
            return (f"{name} is a 1000-class ImageNet model, which maps by itself only to IN-9's, RIVAL10's, "
                    f"ImageNet-D's or ImageNet's own 1000 wnid folders (Full-IN), each with the class folders named as theirs; for "
                    f"this dataset's {len(classes)} classes ({_few(classes)}) give --class-map FILE.json "
                    f"({{\"<ImageNet index>\": \"<class folder>\"}}; class_map in a study's model table)")
        return None
    if class_map is not None:
        return (f"--class-map maps the outputs of a 1000-class ImageNet model; {name} has {num_classes} outputs, "
                f"the dataset's own classes")
    if num_classes != len(classes):
        return f"{name} has {num_classes} outputs but the dataset has {len(classes)} classes ({_few(classes)})"
    return None


def first_three(items: Sequence[str]) -> str:
    """'a, b, c (+2 more)': the first three items, and how many more there are."""
    return ", ".join(items[:3]) + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")


def _few(classes: Sequence[str]) -> str:
    shown = ", ".join(classes[:4])
    return f"{shown}, ..." if len(classes) > 4 else shown


def check_compatible(model: BgModel, classes: Sequence[str]) -> None:
    """A model's label space must match the dataset's classes; a 1000-class model gets the
    dataset's class map (`class_maps`), which decisions then use.

    A 1000-class ImageNet model reads IN-9 through upstream's table, RIVAL10 through RIVAL10's
    tables, and any dataset through the model's `--class-map` file (`class_map_file`); without
    one it is refused. A model that records its training class folders is also compared with the
    dataset's by name: a difference is allowed (the same classes may be spelt differently) but
    warned about on stderr, and `provenance.Provenance.of` records it in the run.
    """
    spec = model.spec
    problem = compatibility_problem(spec.name, spec.label_space, spec.num_classes, classes, model.class_map_file)
    if problem is not None:
        raise BgbenchError(problem)
    if spec.label_space == IMAGENET1K:
        resolved = resolve_class_map(classes, model.class_map_file)
        model.class_map = None if resolved.name == IN9 else resolved
    mismatch = class_name_mismatch(spec.class_names, classes)
    if mismatch is not None:
        shown = first_three([f"{m!r} vs {d!r}" for m, d in mismatch["differ"]])
        status(f"warning: {spec.name} was trained on other class folders than this dataset's "
               f"(model vs data: {shown}); label i is read as the dataset's i-th class folder")
