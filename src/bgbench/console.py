"""Status lines and progress bars, always on stderr (stdout is for results, and JSON with --json).

A progress bar draws only where stderr is a terminal. Elsewhere (CI logs, `make demo > log`) a
long job prints a handful of plain lines instead of hundreds of carriage-return frames.
"""
from __future__ import annotations

import sys
import time
from typing import List, Optional, Sequence

#: In a non-terminal, a bar prints one line at most every this many seconds (plus the last).
LOG_EVERY_S = 30.0


def plural(n: int, word: str) -> str:
    """'1 model', '2 models' ('1 image', '0 images')."""
    return f"{n} {word if n == 1 else word + 's'}"


def aligned(table: Sequence[Sequence[str]]) -> List[str]:
    """A table's rows (the header first) as lines: each column as wide as its widest cell, two spaces apart."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table]


def status(message: str) -> None:
    """One status line on stderr."""
    print(message, file=sys.stderr, flush=True)


class _LogBar:
    """tqdm's interface, printing a plain line now and then instead of redrawing."""

    def __init__(self, total: Optional[int] = None, desc: str = "", unit: str = "it", initial: int = 0,
                 silent: bool = False, **_):
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.silent = silent  # counts, never prints (progress disabled)
        self.start = self.last = time.time()
        self.postfix = ""
        self.format_dict = {"elapsed": 0.0}

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.time()
        self.format_dict["elapsed"] = now - self.start
        if not self.silent and now - self.last >= LOG_EVERY_S:
            self.last = now
            self._line()

    def set_postfix(self, **kw) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())

    def _line(self) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        extra = f" ({self.postfix})" if self.postfix else ""
        elapsed = time.time() - self.start
        eta = ""  # ', R unit/s, ETA H:MM:SS' once there is a rate: a batch job's log says when it will end
        if self.n and elapsed > 0:
            from tqdm import tqdm
            rate = self.n / elapsed
            left = "" if self.total is None else f", ETA {tqdm.format_interval(max(0, self.total - self.n) / rate)}"
            eta = f", {rate:.3g} {self.unit}/s{left}"
        status(f"{self.desc}: {self.n}{of} {self.unit} in {elapsed:.0f}s{eta}{extra}")

    def close(self) -> None:
        if not self.silent and time.time() - self.start >= LOG_EVERY_S:
            self._line()


def progress(*, enabled: bool = True, **kwargs):
    """A tqdm bar on a terminal, a few log lines elsewhere, nothing when `enabled` is False: a bar
    of `total` steps that its caller `update`s and `close`s."""
    if enabled and hasattr(sys.stderr, "isatty") and sys.stderr.isatty():
        from tqdm import tqdm
        return tqdm(leave=False, file=sys.stderr, **kwargs)
    return _LogBar(silent=not enabled, **kwargs)
