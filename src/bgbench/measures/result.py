"""The one result class of the probes (a result as `recording` describes every run's).

A probe's result is `MeasureResult`: its rows, its config, and the outputs beyond the rows (the
pictures it wrote, a layer); its summary is its measure's pure `summarize` of the rows under the
config, so the fresh result and the stored run read back alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .registry import get_measure


def without_nan(value: Any) -> Any:
    """`value` (nested dicts, lists, tuples) with every NaN float made None: a summary's `to_dict`
    is strict JSON, as `--json` prints it."""
    if isinstance(value, dict):
        return {k: without_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_nan(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


@dataclass
class MeasureResult:
    """A probe's run: `measure` (its name), its per-image `rows` (without run_id) and run `config`;
    `extra`: outputs beyond the rows, in the order they are printed; `notes`: lines printed after
    the summary's table (where the pictures are)."""

    measure: str
    rows: List[tuple]
    config: dict
    seconds: float = 0.0
    run_id: Optional[int] = None
    provenance: Any = None
    extra: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def summary(self) -> Any:
        """The measure's summary of the rows, carrying this result's run id once it is recorded."""
        s = get_measure(self.measure).summarize(self.rows, self.config)
        s.run_id = self.run_id
        return s

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {get_measure(self.measure).table.name: self.rows}

    def metric_rows(self) -> List[tuple]:
        return self.summary().metric_rows()

    def outputs(self) -> Dict[str, Any]:
        return {"images": self.images(), "seconds": round(self.seconds, 2), **self.extra}

    def images(self) -> int:
        """Images the run measured: the config's count when it records one, else the distinct ids."""
        return int(self.config.get("images") or len({r[0] for r in self.rows}))

    def to_dict(self) -> Dict[str, Any]:
        """What `--json` prints: the run id, the outputs beyond the rows, then the summary."""
        return {"run_id": self.run_id, **self.extra, **self.summary().to_dict()}

    def text(self) -> str:
        """What the command prints: the summary's text, then where its pictures are."""
        return "\n".join([get_measure(self.measure).text(self), *self.notes])
