"""How commands print: results on stdout (a table, or one strict JSON document with --json), and the
status line that says where a run was stored (stderr)."""
from __future__ import annotations
import argparse
import json
from typing import Any, Optional

from ..evaluation.metrics import finite_or_none


def to_json(document: Any) -> str:
    """One strict JSON document (no NaN or Infinity: those become null)."""
    return json.dumps(finite_or_none(document), indent=1, allow_nan=False, default=_plain)


def _plain(obj: Any) -> Any:
    """What JSON cannot write by itself: an object's `as_dict()`, anything else as text (a path)."""
    return finite_or_none(obj.as_dict()) if hasattr(obj, "as_dict") else str(obj)


def emit(args: argparse.Namespace, document: Any, text: str) -> None:
    """Print the result: `document` as strict JSON with --json, else `text`."""
    print(to_json(document) if getattr(args, "json", False) else text)


def stored_in(run_id: Optional[int], where, what: str = "run") -> None:
    """The status line that says where a run was recorded (stderr: it is not a result)."""
    from ..console import status
    status(f"{what} {run_id} stored in {where}")
