"""The one result class of the measures that run a model: per-image rows, the run config, and what
the recording, `--json`, the printed table and the report read of every measure alike.

A measure's result subclass names its measure and, when it has any, the outputs beyond the rows
(`extra_outputs`: the pictures it wrote, a layer name). Everything else comes from the registry's
declaration: the rows go to the measure's table, the summary is its pure `summarize` of the rows
under the config, the metrics are the summary's, and `to_dict`/`table` print the summary the same
way for every measure.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Optional

from .registry import get_measure


@dataclass
class MeasureResult:
    """rows: the per-image rows of the measure's table (without run_id); config: the run config."""

    rows: List[tuple]
    config: dict
    seconds: float = 0.0
    run_id: Optional[int] = None
    provenance: Any = None

    #: The registered measure this is a result of.
    measure: ClassVar[str] = ""

    def summarize(self) -> Any:
        """The measure's summary of `rows` under `config`; subclasses supply it (a pure function)."""
        raise NotImplementedError

    def extra_outputs(self) -> Dict[str, Any]:
        """Outputs beyond the images and the seconds (pictures, a layer name); none by default."""
        return {}

    def summary(self) -> Any:
        """The summary, carrying this result's run id once it is recorded."""
        s = self.summarize()
        s.run_id = self.run_id
        return s

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {get_measure(self.measure).table: self.rows}

    def metric_rows(self) -> List[tuple]:
        return self.summary().metric_rows()

    def outputs(self) -> Dict[str, Any]:
        return {"images": self.images(), "seconds": round(self.seconds, 2), **self.extra_outputs()}

    def images(self) -> int:
        """Images the run measured: the config's count when it records one, else the distinct ids."""
        return int(self.config.get("images") or len({r[0] for r in self.rows}))

    def to_dict(self) -> Dict[str, Any]:
        """What `--json` prints: the run id, the summary, and the extra outputs the summary does not
        already hold under the same name."""
        return {"run_id": self.run_id, **self.extra_outputs(), **self.summary().to_dict()}

    def table(self) -> str:
        """What the command prints: the summary's table, then where its pictures are."""
        lines = [self.summary().table()]
        lines += [f"{k.replace('_', ' ')}: {v}" for k, v in self.extra_outputs().items()
                  if isinstance(v, str) and v]
        return "\n".join(lines)


def stored_summary(store, run_id: int, kind: str, table, summary_of: Callable[[list, dict], Any]) -> Any:
    """The summary of a stored run of `kind`, recomputed from its rows in `table` (a `TableSchema`)
    by the measure's pure `summary_of(rows, config)` under the run's recorded config: what every
    measure's `read` is, so that a stored run summarises exactly as the fresh result did."""
    from ..errors import BgbenchError
    from ..probing.tables import run_row
    run = run_row(store, run_id, kinds=(kind,))
    rows = [tuple(r[c] for c in table.column_names) for r in store.probe_rows(table.name, int(run_id))]
    if not rows:
        raise BgbenchError(f"{kind} run {run_id} has no per-image results stored")
    s = summary_of(rows, json.loads(run["config"]))
    s.run_id = int(run_id)
    return s
