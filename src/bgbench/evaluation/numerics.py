"""What a forward's arithmetic is: strict fp32 (no TF32), TF32, plain autocast, and what bf16 costs here.

fp32 means fp32: every fp32 forward (the fp32 precision, and bf16-verified's rechecks, audits and
confirmations) runs under `strict_fp32`, which turns TF32 and bf16-reduced fp32 matmul and
convolution off and then restores the user's settings. `fp32_settings` is what the run records of
those settings. `bf16_slowdown` is measured before a reduced-precision run, which says so when bf16
is the slower.
"""
from __future__ import annotations

import contextlib
import functools
import time
from typing import Dict, Iterator

import torch

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}

#: the per-backend fp32 precision settings of PyTorch's newer API (`torch.backends.<path>.fp32_precision`)
_FP32_KNOBS = ("cuda.matmul", "cudnn.conv", "cudnn.rnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn")


def _knob(path: str):
    obj = torch.backends
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj if obj is not None and hasattr(obj, "fp32_precision") else None


@functools.lru_cache(maxsize=None)
def _knobs() -> Dict[str, object]:
    """The backends of `_FP32_KNOBS` this PyTorch has (none before its per-backend API); looked up
    once, since looking them up costs more than setting them."""
    return {path: _knob(path) for path in _FP32_KNOBS if _knob(path) is not None}


def fp32_settings() -> Dict[str, object]:
    """The user's settings that decide whether an fp32 matmul or convolution really is fp32.

    With PyTorch's per-backend API: each backend's `fp32_precision` ('ieee' is fp32; 'tf32' and
    'bf16' are not; 'none' defers to the backend). Otherwise the legacy flags.
    """
    knobs = _knobs()
    if knobs:
        return {path: knob.fp32_precision for path, knob in knobs.items()}
    return {"cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def strict_fp32() -> contextlib.AbstractContextManager:
    """fp32 forwards in true fp32: TF32 (cuBLAS, cuDNN) and oneDNN's reduced fp32 off, then the
    user's settings restored. PyTorch's default lets cuDNN convolutions use TF32 on Ampere and
    later GPUs, so without this an fp32 run on CUDA is not fp32."""
    return _fp32_as(tf32=False)


@contextlib.contextmanager
def _fp32_as(tf32: bool) -> Iterator[None]:
    knobs = _knobs()
    saved = fp32_settings()
    try:
        if knobs:  # the legacy flags must not be mixed with this API: PyTorch refuses to read them then
            for path, knob in knobs.items():
                knob.fp32_precision = "tf32" if tf32 and path.startswith(("cuda.", "cudnn.")) else "ieee"
        else:
            torch.set_float32_matmul_precision("high" if tf32 else "highest")
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
        yield
    finally:
        if knobs:
            for path, knob in knobs.items():
                knob.fp32_precision = saved[path]
        else:
            torch.set_float32_matmul_precision(saved["float32_matmul_precision"])
            torch.backends.cuda.matmul.allow_tf32 = saved["cuda.matmul.allow_tf32"]
            torch.backends.cudnn.allow_tf32 = saved["cudnn.allow_tf32"]


def bf16_slowdown(model: torch.nn.Module, x: torch.Tensor, repeats: int = 2) -> float:
    """Seconds of a bf16-autocast forward of `x` over an fp32 one (best of `repeats`, after one
    warm-up each): above 1, bf16 costs more than it saves on this device.

    Measured rather than guessed from CPU flags: this project's CI CPU reports AVX512-BF16, yet
    a challenge ran 184 s under bf16-verified against about 35 s in fp32. bf16 pays on hardware
    with bf16 matrix units that the kernels use (GPUs from Ampere on, CPUs with AMX)."""
    device_type = x.device.type

    def best(bf16: bool) -> float:
        times = []
        for i in range(repeats + 1):
            context = torch.autocast(device_type=device_type, dtype=torch.bfloat16) if bf16 else \
                contextlib.nullcontext()
            if device_type == "cuda":
                torch.cuda.synchronize(x.device)
            t0 = time.perf_counter()
            with torch.inference_mode(), context:
                model(x)
            if device_type == "cuda":
                torch.cuda.synchronize(x.device)
            if i:
                times.append(time.perf_counter() - t0)
        return min(times)
    return best(True) / max(best(False), 1e-9)


def forward_context(precision: str, device) -> contextlib.AbstractContextManager:
    """The arithmetic a forward runs under: `strict_fp32` for fp32; for tf32, fp32 tensors whose CUDA
    matmuls and convolutions round their inputs to TF32 whatever the user's settings (oneDNN's fp32
    stays exact; restored afterwards); else autocast to bf16/fp16 on the device's type (CPU autocast
    supports bf16; fp16 and tf32 on a CPU are refused by the configs). bf16 and fp16 are not exact:
    predictions near a tie can change."""
    if precision == "fp32":
        return strict_fp32()
    if precision == "tf32":
        return _fp32_as(tf32=True)
    return torch.autocast(device_type=torch.device(device).type, dtype=AUTOCAST[precision])


def note_if_slower(precision: str, model: torch.nn.Module, device: str) -> None:
    """One status line before a bf16 run when a bf16 forward is slower than an fp32 one on `device`,
    measured on four seeded random inputs at the model's input size: bf16 runs natively only where
    the kernels have bf16 matrix units to use, and is emulated (slower, and still not exact) elsewhere."""
    from ..console import status
    if "bf16" not in precision:
        return
    _, h, w = model.spec.input_size
    x = torch.rand(4, 3, h, w, generator=torch.Generator().manual_seed(0)).to(device)
    ratio = bf16_slowdown(model, x)
    if ratio > 1:
        status(f"note: --precision {precision}: a bf16 forward takes {ratio:.1f}x an fp32 one on {device} "
               f"(measured on {len(x)} inputs): bf16 is not native here (it pays on GPUs from Ampere on and "
               "CPUs with AMX), and fp32 is exact: consider --precision fp32")
