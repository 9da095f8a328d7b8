"""`Result`: the one base of what the public functions return (`bgbench.__all__`).

Every result says three things alike: `provenance` (how `bgbench.record` files it; None for what is
recomputed from stored runs and never recorded: analyses, comparisons, a report), `to_dict()` (its
strict-JSON document, as `--json` prints it) and `table()` (its numbers as plain rows: a list of
dicts with the same keys, which `csv.DictWriter` writes and `pandas.DataFrame` reads as it is, so
no result depends on pandas). `text()` is what its command prints.

By default a result's table is its stored metrics, one row per (metric, variant) with the
estimate's interval and count; a result whose numbers are another table (an analysis's rows, the
files a writer wrote) says so itself.
"""
from __future__ import annotations

from typing import Any, Dict, List

#: The keys of a metric row (`table()`'s default): the store's metrics table, without the run id.
METRIC_KEYS = ("metric", "variant", "value", "lo", "hi", "n")


class Result:
    """The base of every public function's result; see the module docstring."""

    provenance: Any = None

    def to_dict(self) -> Dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} declares its document")

    def text(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} declares its printed table")

    def table(self) -> List[Dict[str, Any]]:
        """Its stored metrics as rows {metric, variant, value, lo, hi, n}."""
        return [dict(zip(METRIC_KEYS, row)) for row in self.metric_rows()]

    def metric_rows(self) -> List[tuple]:
        """Rows for the store's metrics table: (name, variant, value, lo, hi, n); none by default."""
        return []
