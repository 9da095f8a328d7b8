"""The challenge's configuration, free of torch so that the CLI's choices cost no import."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Optional

from ... import checks, protocols
from ...classes import Mapping, mapping_field
from ...options import BATCH_SIZE, flag, runtime
from ...evaluation.precision_flag import check_gpu_only
from ...errors import BgbenchError



class ChallengePrecision(StrEnum):
    """fp32 is exact; bf16-verified confirms fooled verdicts in fp32 and rechecks in fp32 every
    composite near a decision boundary (survivors are as good as its audits); bf16 and fp16 are plain
    autocast (fp16 needs a GPU); tf32 lets a GPU's matrix units round fp32 inputs to TF32 (not exact)."""

    FP32 = "fp32"
    TF32 = "tf32"  # fp32 tensors, TF32 matmuls and convolutions; CUDA only
    BF16_VERIFIED = "bf16-verified"
    BF16 = "bf16"
    FP16 = "fp16"


PRECISIONS = tuple(p.value for p in ChallengePrecision)
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
            bf16-fp32 logit deviations (delta; see `verified`).
        protocol: a reference protocol (`bgbench.protocols`): it fixes the mapping and the precision
            (and, on the model, the resize policy and zero-shot head); part of the run's identity.
    """

    batch_size: int = field(default=BATCH_SIZE, metadata=runtime())
    mapping: Mapping = mapping_field()
    precision: ChallengePrecision = field(default=ChallengePrecision.FP32, metadata=flag(
        "--precision", "fp32 is exact (TF32 off on GPUs); bf16-verified runs bf16, confirms every fooled verdict in "
        "fp32 (exact) and recomputes in fp32 every composite whose decision margin is within delta, the bf16 error "
        "measured by random audits: a survivor's verdict is as good as the audits; tf32 (CUDA only) and plain "
        "bf16/fp16 autocast are not exact. bf16 pays only on hardware with bf16 units: GPUs from Ampere on, CPUs with AVX512-BF16 or AMX; "
        "elsewhere it is emulated and slower than fp32, and the run says so (default %(default)s)",
        choices=PRECISIONS))
    full: bool = field(default=False, metadata=flag(
        "--full", "compute every foreground x background prediction (kept in the store): ASR, class fool rates, "
        "top-5 backgrounds grid and ASR histogram", action="store_true"))
    save_every: int = field(default=16, metadata=runtime(flag(
        "--save-every", "store progress every N foregrounds (default %(default)s)")))
    device: str = field(default="cpu", metadata=runtime())
    sample: Optional[int] = field(default=None, metadata=flag(
        "--sample", "estimate from the first N foregrounds of a seeded order stratified by class, each against every "
        "background (exact verdicts, a Wilson interval for the share); rerun with a larger N or without --sample to "
        "extend the same run", type=int, metavar="N"))
    halfwidth: Optional[float] = field(default=None, metadata=flag(
        "--halfwidth", "visit foregrounds in the seeded order and stop once the 95%% interval's half-width is <= H "
        "(0 < H < 0.5); checked after 16, 32, 64 ... foregrounds (doubling) until that reaches max(32, 2 x batch "
        "size), then after every such chunk (all x the torchrun processes)", type=float, metavar="H"))
    seed: int = field(default=0, metadata=flag("--seed", "seed of the foreground order (default %(default)s)"))
    verify_safety: float = field(default=DEFAULT_SAFETY, metadata=flag(
        "--verify-safety", "bf16-verified: delta is F x the largest spread of bf16-fp32 logit deviations that the "
        "calibration and audits measured (default %(default)s, recorded)", metavar="F"))
    protocol: Optional[str] = field(default=None, metadata=protocols.protocol_flag())
    rerun: bool = field(default=False, metadata=runtime(flag(
        "--rerun", "measure anew even when the results store holds a finished run of the same model, weights, "
        "options and data (without it, that run is shown again and nothing is computed)", action="store_true")))

    def __post_init__(self):
        for name, value in (("--batch-size", self.batch_size), ("--save-every", self.save_every),
                            ("--sample", self.sample), ("--seed", self.seed)):
            if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool)):
                raise BgbenchError(f"{name} must be a whole number, not {value!r}")
        for name, value in (("--batch-size", self.batch_size), ("--save-every", self.save_every),
                            ("--sample", self.sample)):
            checks.at_least(name, value, 1)
        checks.within("--halfwidth", self.halfwidth, 0, 0.5, open_low=True, open_high=True)
        checks.at_least("--verify-safety", self.verify_safety, 1)
        self.mapping, self.precision = (checks.member("--mapping", self.mapping, Mapping),
                                        checks.member("--precision", self.precision, ChallengePrecision))
        fixed = protocols.resolve(self.protocol, mapping=self.mapping, precision=self.precision)
        self.mapping, self.precision = Mapping(fixed["mapping"]), ChallengePrecision(fixed["precision"])
        checks.device(self.device)
        check_gpu_only(self.precision, self.device, "fp32 (exact), bf16-verified or bf16")
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
        return world * (max(32, 2 * self.batch_size) if self.halfwidth is not None else max(256, 8 * self.batch_size))

    def first_chunk(self, world: int = 1) -> int:
        """The first chunk's size. With `halfwidth`, a small one (16 per process), doubling up to
        `chunk_size`: the rule is checked after 16, 32, 64, 128 ... foregrounds, so a small dataset
        can stop early. Otherwise chunks are `chunk_size` from the start."""
        return min(FIRST_HALFWIDTH_CHUNK * world, self.chunk_size(world)) if self.halfwidth is not None \
            else self.chunk_size(world)


