"""The evaluation's configuration, checked once for the API and the CLI alike."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from ...options import runtime
from ... import checks, protocols
from ...classes import Mapping
from ...data.prefetch import workers_field


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
        protocol: a reference protocol (`bgbench.protocols`), which fixes the mapping, ten-crop and
            (on the model) the resize policy and zero-shot head; recorded with the run.
        split: the split to read (default: the dataset's evaluation split, val for IN-9, test for
            Waterbirds; see `data.resolve.resolve_layout`).
    """

    variants: Optional[List[str]] = None
    mapping: str = Mapping.ARGMAX.value
    batch_size: int = field(default=64, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    workers: Optional[int] = workers_field()
    seed: int = 0
    ten_crop: bool = False
    protocol: Optional[str] = None
    split: Optional[str] = None

    def __post_init__(self):
        checks.one_of("mapping", str(self.mapping), [m.value for m in Mapping])
        fixed = protocols.resolve(self.protocol, mapping=str(self.mapping), ten_crop=self.ten_crop)
        self.mapping, self.ten_crop = fixed["mapping"], fixed["ten_crop"]
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--workers", self.workers, 1)
        checks.device(self.device)
        if self.variants is not None:
            self.variants = list(self.variants)
