"""`--precision` for eval and the probes, checked without importing torch (configs are built by
`bgbench --help`'s parsers): fp32 is exact, bf16 and fp16 are autocast."""
from __future__ import annotations

from dataclasses import field
from enum import StrEnum

from .. import checks
from ..errors import BgbenchError
from ..options import flag


class Precision(StrEnum):
    """The arithmetic of a model's forwards in eval and the probes (the challenge adds bf16-verified)."""

    FP32 = "fp32"  # exact: TF32 off on GPUs, so a GPU predicts what the CPU does
    BF16 = "bf16"  # autocast
    FP16 = "fp16"  # autocast; GPUs only


#: The same names as `evaluation.numerics.PRECISIONS` (which needs torch).
PRECISIONS = tuple(p.value for p in Precision)


def precision_field():
    """The `precision` field of eval's and every probe's config, declared once (default, flag, help)."""
    return field(default=Precision.FP32, metadata=flag(
        "--precision", "fp32 is exact (TF32 off on GPUs, so a GPU predicts what the CPU does); bf16 and fp16 are "
        "autocast around the forwards, faster on GPUs and not exact (fp16 needs a GPU) (default %(default)s)",
        choices=PRECISIONS))


def check_precision(precision: str, device: str) -> Precision:
    """`precision` as a `Precision`; one line for one that does not exist, or fp16 where autocast has
    none (the CPU)."""
    precision = checks.member("--precision", precision, Precision)
    if precision is Precision.FP16 and not str(device).startswith("cuda"):
        raise BgbenchError("--precision fp16 needs a GPU (--device cuda); on a CPU use fp32 (exact) or bf16")
    return precision
