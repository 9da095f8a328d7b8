"""The challenge's configuration, free of torch so that the CLI's choices cost no import."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Optional

from ...options import runtime
from ... import checks, protocols
from ...classes import Mapping
from ...errors import BgbenchError

#: fp32 is exact; bf16-verified confirms fooled verdicts in fp32 and rechecks in fp32 every composite
#: near a decision boundary (survivors are as good as its audits); bf16 and fp16 are plain autocast
#: (fp16 needs a GPU).
PRECISIONS = ("fp32", "bf16-verified", "bf16", "fp16")
#: bf16-verified: delta is this factor x the largest spread of bf16-vs-fp32 logit deviations measured
#: on the composites it calibrates on and audits, drawn at random across the run.
DEFAULT_SAFETY = 4.0
#: --halfwidth: foregrounds (per process) in the first chunk, after which the rule is first checked.
FIRST_HALFWIDTH_CHUNK = 16


@dataclass
class ChallengeConfig:
    """How to run the challenge.

    Attributes:
        sample: evaluate only the first N foregrounds of the seeded, class-stratified order (an
            estimate with a Wilson interval; each verdict is still exact).
        halfwidth: stop at the first chunk where the 95% Wilson half-width is at most this.
        seed: the seed of the visiting order (part of the run's identity).
        verify_safety: for precision 'bf16-verified', the factor on the largest measured spread of
            bf16-fp32 logit deviations (delta; see `precision`).
        protocol: a reference protocol (`bgbench.protocols`): it fixes the mapping and the precision
            (and, on the model, the resize policy and zero-shot head); part of the run's identity.
    """

    batch_size: int = field(default=64, metadata=runtime())
    mapping: str = "argmax"
    precision: str = "fp32"
    full: bool = False
    save_every: int = field(default=16, metadata=runtime())
    device: str = field(default="cpu", metadata=runtime())
    sample: Optional[int] = None
    halfwidth: Optional[float] = None
    seed: int = 0
    verify_safety: float = DEFAULT_SAFETY
    protocol: Optional[str] = None

    def __post_init__(self):
        for name, value in (("--batch-size", self.batch_size), ("--save-every", self.save_every),
                            ("--sample", self.sample), ("--seed", self.seed)):
            if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool)):
                raise BgbenchError(f"{name} must be a whole number, not {value!r}")
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--save-every", self.save_every, 1)
        checks.at_least("--sample", self.sample, 1)
        checks.within("--halfwidth", self.halfwidth, 0, 0.5, open_low=True, open_high=True)
        checks.at_least("--verify-safety", self.verify_safety, 1)
        checks.one_of("--mapping", self.mapping, [m.value for m in Mapping])
        checks.one_of("--precision", self.precision, PRECISIONS)
        fixed = protocols.resolve(self.protocol, mapping=self.mapping, precision=self.precision)
        self.mapping, self.precision = fixed["mapping"], fixed["precision"]
        checks.device(self.device)
        if self.precision == "fp16" and not self.device.startswith("cuda"):
            raise BgbenchError("--precision fp16 needs a GPU (--device cuda); on a CPU use fp32 (exact), "
                               "bf16-verified or bf16")
        if self.full and self.sampled:
            raise BgbenchError("--full computes every foreground's whole row; it cannot be combined with "
                               "--sample or --halfwidth")

    @property
    def sampled(self) -> bool:
        return self.sample is not None or self.halfwidth is not None

    def identity(self) -> dict:
        """What makes two runs the same job. Batch size and device do not change verdicts; nor do
        `sample` and `halfwidth`, which only say how far along the seeded order to go, so a larger
        sample or a full run continues a sampled one."""
        identity = {"mapping": self.mapping, "precision": self.precision, "full": self.full, "seed": self.seed}
        return {**identity, "protocol": self.protocol} if self.protocol else identity

    def chunk_size(self, world: int = 1) -> int:
        """Foregrounds per chunk of the visiting order: small when a stopping rule is checked at
        every chunk boundary, larger otherwise (it bounds the foregrounds decoded at once)."""
        per_rank = max(32, 2 * self.batch_size) if self.halfwidth is not None else max(256, 8 * self.batch_size)
        return per_rank * world

    def first_chunk(self, world: int = 1) -> int:
        """The first chunk's size. With `halfwidth`, a small one (16 per process), doubling up to
        `chunk_size`: the rule is checked after 16, 32, 64, 128 ... foregrounds, so a small dataset
        can stop early. Otherwise chunks are `chunk_size` from the start."""
        return min(FIRST_HALFWIDTH_CHUNK * world, self.chunk_size(world)) if self.halfwidth is not None \
            else self.chunk_size(world)


