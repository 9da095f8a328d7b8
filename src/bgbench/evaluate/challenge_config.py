"""The challenge's configuration, free of torch so that the CLI's choices cost no import."""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from ..classes import Mapping
from ..errors import BgbenchError

PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass
class ChallengeConfig:
    batch_size: int = 64
    mapping: str = "argmax"
    precision: str = "fp32"
    full: bool = False
    save_every: int = 16
    device: str = "cpu"

    def __post_init__(self):
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--save-every", self.save_every, 1)
        checks.one_of("--mapping", self.mapping, [m.value for m in Mapping])
        checks.one_of("--precision", self.precision, PRECISIONS)
        checks.device(self.device)
        if self.precision == "fp16" and not self.device.startswith("cuda"):
            raise BgbenchError("--precision fp16 needs a GPU (--device cuda); on a CPU use fp32 (exact) or bf16")

    def identity(self) -> dict:
        """What makes two runs the same job (batch size and device do not change verdicts)."""
        return {"mapping": self.mapping, "precision": self.precision, "full": self.full}
