"""Why a weights file would not load, said in one line: torch's refusals of a pickle, and the
failures of the libraries that read weights (safetensors, transformers, timm); and the libraries'
own logging kept off stderr while they load (`quiet`).

Kept apart from `checkpoint` so that the `.pt2` guard (which `checkpoint` loads lazily) can say
the same thing without importing it back.
"""
from __future__ import annotations

import contextlib
import logging
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def unpickling_reason(error: Exception) -> str:
    """The gist of torch's weights_only refusal, on one line and without terminal escape codes.

    torch's message is a paragraph with bold escapes; the line that names the offending global
    ("Unsupported global: GLOBAL x.Y ...") is what tells a user what the file holds.
    """
    text = _ANSI.sub("", str(error)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    at = next((k for k, line in enumerate(lines) if "Unsupported global" in line or "WeightsUnpickler error" in line),
              0)
    reason = lines[at] if lines else type(error).__name__
    reason = reason.split("WeightsUnpickler error:", 1)[-1].strip()
    if not reason and at + 1 < len(lines):  # 'WeightsUnpickler error:' alone; the gist is on the next line
        reason = lines[at + 1]
    reason = reason.split(" was not an allowed global")[0]
    return reason[:160]


def weights_failure(error: Exception) -> str:
    """Why a weight file would not load, in a few words: torch's refusal of a pickle (the global it
    names), a size mismatch, or the library's first line."""
    import pickle
    if isinstance(error, pickle.UnpicklingError) or "Weights only load failed" in str(error):
        return f"it needs full unpickling ({unpickling_reason(error)})"
    text = " ".join(str(error).split())
    if "size mismatch" in text:
        text = text[text.index("size mismatch"):]
    return (text or type(error).__name__)[:200]


def first_line(error: Exception) -> str:
    """The first line of a library's error (its type's name when it says nothing), at most 200 characters."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


@contextlib.contextmanager
def quiet(logger: str = "", level: int = logging.ERROR):
    """Keep stderr for bgbench: inside, `logger` (the root logger by default, which open_clip logs
    through: a warning for every random init) says nothing below `level`."""
    log = logging.getLogger(logger)
    saved = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(saved)
