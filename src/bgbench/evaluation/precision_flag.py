"""`--precision` for eval and the probes, checked without importing torch (configs are built by
`bgbench --help`'s parsers): fp32 is exact, tf32 lets a GPU's matrix units round fp32 inputs to
TF32, bf16 and fp16 are autocast."""
from __future__ import annotations

from dataclasses import field
from enum import StrEnum

from ..checks import member
from ..errors import BgbenchError
from ..options import flag


class Precision(StrEnum):
    """The arithmetic of a model's forwards in eval and the probes (the challenge adds bf16-verified)."""

    FP32 = "fp32"  # exact: TF32 off on GPUs, so a GPU predicts what the CPU does
    TF32 = "tf32"  # fp32 tensors, TF32 matmuls and convolutions (10-bit mantissa inputs); CUDA only
    BF16 = "bf16"  # autocast
    FP16 = "fp16"  # autocast; GPUs only


#: The one exact precision. A run under any other says so wherever its numbers are shown, and never
#: stands in for an exact run of the same measure (`reporting.context.Subject.latest`).
EXACT = Precision.FP32.value


#: The names `--precision` takes.
PRECISIONS = tuple(p.value for p in Precision)


def precision_field():
    """The `precision` field of eval's and every probe's config, declared once (default, flag, help)."""
    return field(default=Precision.FP32, metadata=flag(
        "--precision", "fp32 is exact (TF32 off on GPUs, so a GPU predicts what the CPU does); tf32 lets the GPU's "
        "matrix units round matmul and convolution inputs to TF32 (CUDA only); bf16 and fp16 are autocast around "
        "the forwards, faster on GPUs (fp16 needs a GPU). Only fp32 is exact: a run under another precision is shown "
        "with it and never replaces an exact run's number (default %(default)s)",
        choices=PRECISIONS))


def check_precision(precision: str, device: str) -> Precision:
    """`precision` as a `Precision`; one line for one that does not exist, or for fp16 or tf32 on a
    device without them (the CPU)."""
    precision = member("--precision", precision, Precision)
    check_gpu_only(precision, device, "fp32 (exact) or bf16")
    return precision


def check_gpu_only(precision: str, device: str, instead: str) -> None:
    """One line for fp16 or tf32 off CUDA: CPU autocast has no fp16, and TF32 is a GPU's format."""
    if precision in (Precision.FP16, Precision.TF32) and not str(device).startswith("cuda"):
        raise BgbenchError(f"--precision {precision} needs a GPU (--device cuda); on a CPU use {instead}")
