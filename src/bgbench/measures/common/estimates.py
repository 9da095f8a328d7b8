"""A stored metric as the report's sections show it: its value, 95% interval and count.

Eval's accuracies and the challenge's rates both come from `runs`' metrics table (`ctx.metrics`)."""
from __future__ import annotations

from typing import Optional


def estimate(row) -> Optional[dict]:
    """{value, lo, hi, n} of a stored metric row; None for a metric not stored or stored without a value."""
    if row is None or row["value"] is None:
        return None
    return {"value": row["value"], "lo": row["lo"], "hi": row["hi"], "n": row["n"]}
