"""The one result class of the probes (a result as `recording` describes every run's).

A probe's result is `MeasureResult`: its rows, its config, and the outputs beyond the rows (the
pictures it wrote, a layer); its summary is its measure's pure `summarize` of the rows under the
config, so the fresh result and the stored run read back alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ..evaluation.metrics import finite_or_none
from ..result import Result
from .registry import get_measure


def estimate_row(name: str, variant: str, e: Mapping[str, Any], n: Optional[int] = None) -> tuple:
    """A metric row (name, variant, value, lo, hi, n) of an estimate {value, lo, hi, n}; `n` in
    place of the estimate's own where the count is another (a class's images, a group's)."""
    return (name, variant, e["value"], e["lo"], e["hi"], e["n"] if n is None else n)


@dataclass(kw_only=True)
class Summary:
    """The base of a measure's summary, the pure result of its rows: it writes what every summary
    writes alike, so that a summary declares only what is its own, beside its fields:

    - `document()`: its `--json` keys, which `to_dict` makes strict JSON (NaN and inf as None);
    - `metrics()`: its stored numbers as (name, variant, value, lo, hi, n), the headline among
      them, which `metric_rows` stores with NaN as None (the NULL SQLite makes of a NaN);
    - `lines()`: its printed table, which `text` joins; `of_run` says which run it is.

    `run_id` is the stored run it summarises (None for a fresh result not yet recorded)."""

    run_id: Optional[int] = None

    def document(self) -> Dict[str, Any]:
        raise NotImplementedError

    def metrics(self) -> Iterable[tuple]:
        raise NotImplementedError

    def lines(self) -> List[str]:
        raise NotImplementedError

    def to_dict(self) -> Dict[str, Any]:
        """What `--json` prints of it and a report section reads (strict JSON)."""
        return finite_or_none(self.document())

    def metric_rows(self) -> List[tuple]:
        """Rows for the store's metrics table: (name, variant, value, lo, hi, n)."""
        return [tuple(None if isinstance(v, float) and v != v else v for v in row) for row in self.metrics()]

    def text(self) -> str:
        """What the command prints."""
        return "\n".join(self.lines())

    def of_run(self, words: str = " (run {})") -> str:
        """`words` naming its run once it is recorded ('' for a fresh result)."""
        return words.format(self.run_id) if self.run_id else ""


@dataclass
class MeasureResult(Result):
    """A probe's run: `measure` (its name), its per-image `rows` (without run_id) and run `config`;
    `extra`: outputs beyond the rows, in the order they are printed; `notes`: lines printed after
    the summary's table (where the pictures are)."""

    measure: str
    rows: List[Any]  # its measure's typed rows (`Measure.row`)
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
        return int(self.config.get("images") or len({r.image_id for r in self.rows}))

    def to_dict(self) -> Dict[str, Any]:
        """What `--json` prints: the run id, the outputs beyond the rows, then the summary."""
        return {"run_id": self.run_id, **self.extra, **self.summary().to_dict()}

    def text(self) -> str:
        """What the command prints: the summary's text, then where its pictures are."""
        return "\n".join([get_measure(self.measure).text(self), *self.notes])
