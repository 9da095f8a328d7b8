"""How commands print: results on stdout (a table, or one strict JSON document with --json), and the
status line that says where a run was stored (stderr)."""
from __future__ import annotations
import argparse
import json
import math
from pathlib import Path
from typing import Any, Optional


def strict(obj: Any) -> Any:
    """`obj` with every non-finite float replaced by None, so it serializes as strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "as_dict"):
        return strict(obj.as_dict())
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return strict(obj.tolist())
    return obj


def to_json(document: Any) -> str:
    """One strict JSON document (no NaN or Infinity: those become null)."""
    return json.dumps(strict(document), indent=1, allow_nan=False, default=str)


def emit(args: argparse.Namespace, document: Any, text: str) -> None:
    """Print the result: `document` as strict JSON with --json, else `text`."""
    print(to_json(document) if getattr(args, "json", False) else text)


def stored_in(run_id: Optional[int], where, what: str = "run") -> None:
    """The status line that says where a run was recorded (stderr: it is not a result)."""
    from ..console import status
    status(f"{what} {run_id} stored in {where}")
