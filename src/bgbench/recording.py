"""Recording runs: one small step after the computing, for every kind of run.

Compute functions (evaluate, train, build, edit, synth, the probes, the challenge) return results
and never write the store; `record(result, store)` then writes a result with its provenance: the
kind, the model's resolved spec, the resolved config, the data root and fingerprint, the seed and
the bgbench version. Provenance is built in one place, `Provenance.of`. A result offers:

- `provenance`: a `Provenance` (required);
- `metric_rows()`: (name, variant, value, lo, hi, n) rows for the `metrics` table;
- `table_rows()`: {table: rows without run_id} for its own tables (e.g. `predictions`);
- `outputs()`: a JSON-able dict of what the run produced (files, checkpoint sha256, counts);
- `run_status`: the status to close the run with (default 'done');
- `store_path`: set only by jobs that must commit rows while they run (the challenge's verdicts,
  so that a killed run resumes): the run `result.run_id` is already open in that store, and
  `record` finishes it there instead of starting a new one.
"""
from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ContextManager, Dict, Optional

from .result import Result
from .errors import BgbenchError
from .provenance import Provenance
from .store import Store


def start(store: Store, prov: Provenance) -> int:
    """Open a run (status 'running'); long runs that store progress as they go start here."""
    return store.start_run(prov.kind, prov.config, model=prov.model, spec=prov.spec, data_root=prov.data_root,
                           data_fingerprint=prov.data_fingerprint, seed=prov.seed)


def record(result: Any, store: Store | str | Path) -> int:
    """Record a computed result in `store` (a `Store` or a path); returns its run id, also set as
    `result.run_id`. Each call records a new run, except for a result whose run is already open in
    a store (`store_path`: the challenge's), which this finishes there."""
    prov = getattr(result, "provenance", None)
    if not isinstance(prov, Provenance):
        raise BgbenchError(f"a {type(result).__name__} has no provenance, so it is not a run to record; "
                           f"record the result of a job (evaluate, challenge, probe_*, train, build, edit, synth)")
    rows_in = getattr(result, "store_path", None)
    if rows_in is not None:
        target = store.path if isinstance(store, Store) else Path(store).expanduser()
        if Path(rows_in).resolve() != target.resolve():
            raise BgbenchError(f"this {prov.kind} run's rows are stored in {rows_in} (run {result.run_id}); "
                               f"record it there, not in {target}")
    with opened(store) as s:
        known = _recorded_before(s, result) if rows_in is None else None
        if known is not None:  # a finished training run rerun: the same model.pt is already recorded
            result.run_id, result.recorded_before = known, True
            return known
        run_id = start(s, prov) if rows_in is None else result.run_id
        for table, rows in (_call(result, "table_rows") or {}).items():
            s.insert(table, run_id, rows)
        s.insert("metrics", run_id, list(_call(result, "metric_rows") or ()))
        s.finish_run(run_id, status=getattr(result, "run_status", "done"), outputs=_call(result, "outputs"))
        if hasattr(result, "run_id"):
            result.run_id = run_id
        return run_id


def _recorded_before(store: Store, result: Any) -> Optional[int]:
    """The run that already recorded this very training output (the same bytes at the same path),
    or None. The same fit saved to another --out has the same bytes (fits are deterministic) but
    is a run of its own, and the record of another path says nothing about this one."""
    outputs = _call(result, "outputs") or {}
    sha, path = outputs.get("checkpoint_sha256"), outputs.get("checkpoint")
    if result.provenance.kind != "train" or not sha or not path:
        return None
    here = Path(path).resolve()
    saved = ((int(run["id"]), json.loads(run["outputs"] or "{}").get("checkpoint"))
             for run in reversed(store.runs_of_checkpoint("train", sha)))
    return next((run_id for run_id, at in saved if at and Path(at).resolve() == here), None)


def opened(store: Store | str | Path) -> ContextManager[Store]:
    """`store` itself if it is a `Store` (left open), else the store at that path (closed afterwards)."""
    return nullcontext(store) if isinstance(store, Store) else Store(store)


def _call(result: Any, method: str):
    fn = getattr(result, method, None)
    return fn() if callable(fn) else None


@dataclass
class Metric:
    """One row of the `metrics` table."""

    name: str
    value: Optional[float]
    lo: Optional[float] = None
    hi: Optional[float] = None
    n: Optional[int] = None
    variant: str = ""


@dataclass
class Outputs(Result):
    """A result that is only its outputs (a training run, a synth): `outputs()`, a few metrics, provenance."""

    values: Dict[str, Any] = field(default_factory=dict)
    metrics: list = field(default_factory=list)
    provenance: Optional[Provenance] = None
    run_id: Optional[int] = None

    def __getitem__(self, key: str) -> Any:
        """An output by name: `result["checkpoint"]`."""
        return self.values[key]

    def to_dict(self) -> Dict[str, Any]:
        return {"run_id": self.run_id, **self.values, **{m.name: m.value for m in self.metrics}}

    def text(self) -> str:
        """One 'name: value' line per output and metric."""
        return "\n".join(f"{k}: {v}" for k, v in self.to_dict().items() if v is not None)

    def outputs(self) -> Dict[str, Any]:
        return self.values

    def metric_rows(self) -> list:
        return [(m.name, m.variant, m.value, m.lo, m.hi, m.n) for m in self.metrics]
