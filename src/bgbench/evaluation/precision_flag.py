"""`--precision` for eval and the probes, checked without importing torch (configs are built by
`bgbench --help`'s parsers): fp32 is exact, bf16 and fp16 are autocast."""
from __future__ import annotations

from ..errors import BgbenchError

#: The same names as `evaluation.numerics.PRECISIONS` (which needs torch).
PRECISIONS = ("fp32", "bf16", "fp16")


def check_precision(precision: str, device: str) -> None:
    """One line for a precision that does not exist, or fp16 where autocast has none (the CPU)."""
    if precision not in PRECISIONS:
        raise BgbenchError(f"--precision: {precision!r} is not one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and not str(device).startswith("cuda"):
        raise BgbenchError("--precision fp16 needs a GPU (--device cuda); on a CPU use fp32 (exact) or bf16")
