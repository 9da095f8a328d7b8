"""The challenge's arithmetic: `evaluation.numerics` (strict fp32, the recorded settings), which eval
and the probes share since they gained `--precision` too."""
from ...evaluation.numerics import fp32_settings, strict_fp32  # noqa: F401 (the challenge's names)
