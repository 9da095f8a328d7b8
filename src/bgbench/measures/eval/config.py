"""The evaluation's configuration, checked once for the API and the CLI alike."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from ...checks import at_least, device as valid_device, member, one_of
from ...classes import DATASET, IMAGENET1K, Mapping, mapping_field
from ...data.layout import IN9_VARIANTS
from ...options import BATCH_SIZE, flag, runtime, workers_field
from ...protocols import protocol_flag, resolve as resolve_protocol
from ...evaluation.precision_flag import Precision, check_precision, precision_field


@dataclass
class EvalConfig:
    """How to evaluate (the data and the model are arguments of `evaluate`).

    Attributes:
        variants: variant folders to evaluate; None means the IN-9 variants present.
        mapping: decision rule for 1000-class models ('argmax' is the paper's).
        batch_size: images per forward pass.
        device: torch device.
        seed: seed of the BG-Gap's paired bootstrap.
        ten_crop: Resize(256), TenCrop(224) and average the logits (seed 003's test-time option).
        precision: 'fp32' (exact: TF32 off), or 'bf16'/'fp16' autocast around the forward.
        protocol: a reference protocol (`bgbench.protocols`), which fixes the mapping, ten-crop and
            (on the model) the resize policy and zero-shot head; recorded with the run.
        split: the split to read (default: the dataset's evaluation split, val for IN-9, test for
            Waterbirds; see `data.resolve.resolve_layout`).
    """

    variants: Optional[List[str]] = field(default=None, metadata=flag(
        "--variants", f"variant folders to evaluate: {', '.join(IN9_VARIANTS)}, bg_blurred (computed where the data has no folder of "
        f"it), or edit levels such as size_0.05 "
        f"(default: those of {', '.join(IN9_VARIANTS)} present; every folder when only original is, as in "
        f"`bgbench edit` output)", nargs="+", metavar="VARIANT", type=str))
    mapping: Mapping = mapping_field()
    batch_size: int = field(default=BATCH_SIZE, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    seed: int = field(default=0, metadata=flag("--seed", "seed of the BG-Gap's bootstrap (default %(default)s)"))
    rerun: bool = field(default=False, metadata=runtime(flag(
        "--rerun", "predict anew even when the results store holds a finished run of the same model, weights, "
        "options and data (without it, that run is shown again and nothing is computed)", action="store_true")))
    ten_crop: bool = field(default=False, metadata=flag(
        "--ten-crop", "Resize(256), TenCrop(224) and average the logits of the ten crops (seed 003's test-time "
        "option)", action="store_true"))
    protocol: Optional[str] = field(default=None, metadata=protocol_flag())
    precision: Precision = precision_field()
    split: Optional[str] = field(default=None, metadata=flag(
        "--split", "split to evaluate (default: the dataset's evaluation split: val for IN-9 and RIVAL10's folders, "
        "test for Waterbirds and a groups.csv with a split column)", type=str))

    def __post_init__(self):
        self.mapping = member("--mapping", self.mapping, Mapping)
        fixed = resolve_protocol(self.protocol, mapping=self.mapping, ten_crop=self.ten_crop)
        self.mapping, self.ten_crop = Mapping(fixed["mapping"]), fixed["ten_crop"]
        at_least("--batch-size", self.batch_size, 1)
        at_least("--workers", self.workers, 1)
        valid_device(self.device)
        self.precision = check_precision(self.precision, self.device)
        if self.variants is not None:
            self.variants = list(self.variants)


#: Label spaces of a predictions file: a dataset class, or an ImageNet class (mapped like a model's).
LABEL_SPACES = (DATASET, IMAGENET1K)


@dataclass
class PredictionFileConfig:
    """How to read a predictions file (checked once, for the API and the CLI)."""

    label_space: str = field(default=DATASET, metadata=flag(
        "--label-space", "--predictions: pred is a dataset class (index or name) or an ImageNet class (imagenet1k, "
        "mapped to IN-9) (default %(default)s)", choices=LABEL_SPACES))
    mapping: Mapping = Mapping.ARGMAX
    name: Optional[str] = field(default=None, metadata=flag(
        "--name", "--predictions: the model's name (run model predictions:NAME; default: the file's stem)", type=str))
    seed: int = 0  # of the BG-Gap's bootstrap
    split: str = "val"
    protocol: Optional[str] = None
    class_map: Optional[str] = None  # imagenet1k files on a dataset other than IN-9, RIVAL10, Full-IN

    def __post_init__(self):
        one_of("--label-space", self.label_space, LABEL_SPACES)
        self.mapping = member("--mapping", self.mapping, Mapping)
        self.mapping = Mapping(resolve_protocol(self.protocol, mapping=self.mapping)["mapping"])
