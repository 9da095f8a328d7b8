"""Recording runs: one small step after the computing, for every kind of run.

Compute functions (evaluate, the challenge's finish, train, build, analyses, probes) return
results and never touch the store. `record` then writes a result with its provenance: the kind,
the model's resolved spec, the resolved config, the data root and fingerprint, the seed and the
bgbench version. A result offers any of:

- `metric_rows()`: (name, variant, value, lo, hi, n) rows for the `metrics` table;
- `table_rows()`: {table: rows without run_id} for its own tables (e.g. `predictions`);
- `outputs()`: a JSON-able dict of what the run produced (files, checkpoint sha256, counts).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

from .classes import class_name_mismatch
from .store import Store


@dataclass
class Provenance:
    """Where a run came from: what the store keeps beside its results."""

    kind: str
    config: Dict[str, Any]
    model: Optional[str] = None
    spec: Optional[Dict[str, Any]] = None
    data_root: Optional[str] = None
    data_fingerprint: Optional[str] = None
    seed: Optional[int] = None

    @classmethod
    def of(cls, kind: str, config: dict, model=None, layout=None, seed: Optional[int] = None,
           **extra) -> "Provenance":
        """Provenance from a `BgModel` (its spec) and a data `Layout` (root, fingerprint, classes).

        The data root is recorded as an absolute path, so that a later command run from another
        folder (an analysis that reads the boxes, the report) finds the data; the fingerprint
        stays the dataset's identity. When the model records the class folders it was trained on
        and they differ from the dataset's, the config says so (`class_names_mismatch`).
        """
        spec = model.spec.to_dict() if model is not None else None
        data = {}
        if layout is not None:
            data = {"data_root": str(Path(layout.root).resolve()), "data_fingerprint": layout.fingerprint()}
            config = {**config, "classes": list(layout.classes)}
            mismatch = class_name_mismatch((spec or {}).get("class_names"), layout.classes)
            if mismatch is not None:
                config["class_names_mismatch"] = mismatch
        return cls(kind=kind, config=config, model=spec["name"] if spec else None, spec=spec, seed=seed,
                   **{**data, **extra})


def model_label(model: Optional[str], spec: Any = None, checkpoint_sha256: Optional[str] = None) -> str:
    """How every listing names a model: its string plus which weights it carries.

    `timm:test_resnet` may be a random init, a state_dict or a robustness checkpoint; the name
    alone does not tell them apart, so a checkpoint adds its short sha256 and a random init its
    seed. `spec` is the stored spec (a dict or its JSON text).
    """
    if not model:
        return "-"
    if isinstance(spec, str):
        spec = json.loads(spec) if spec else None
    spec = spec or {}
    sha = checkpoint_sha256 or spec.get("checkpoint_sha256")
    if sha:
        return f"{model} [sha256 {sha[:8]}]"
    seed = (spec.get("extra") or {}).get("init_seed")
    if seed is not None:
        return f"{model} [random init, seed {seed}]"
    return model


def run_model_label(run) -> str:
    """`model_label` of a stored run row."""
    return model_label(run["model"], run["spec"], run["checkpoint_sha256"])


def start(store: Store, prov: Provenance) -> int:
    """Open a run (status 'running'); long runs that store progress as they go start here."""
    return store.start_run(prov.kind, prov.config, model=prov.model, spec=prov.spec, data_root=prov.data_root,
                           data_fingerprint=prov.data_fingerprint, seed=prov.seed)


def finish(store: Store, run_id: int, result: Any = None, status: str = "done") -> int:
    """Write a result's metrics, tables and outputs into run `run_id` and close it."""
    if result is not None:
        for table, rows in (_call(result, "table_rows") or {}).items():
            store.insert(table, run_id, rows)
        store.insert("metrics", run_id, list(_call(result, "metric_rows") or ()))
    store.finish_run(run_id, status=status, outputs=_call(result, "outputs"))
    if result is not None and hasattr(result, "run_id"):
        result.run_id = run_id
    return run_id


def record(store: Store, prov: Provenance, result: Any) -> int:
    """Record a finished computation as one run; returns its id (also set on `result.run_id`)."""
    return finish(store, start(store, prov), result)


def _call(result: Any, method: str):
    fn = getattr(result, method, None)
    return fn() if callable(fn) else None


@dataclass
class Metric:
    """One row of the `metrics` table; `Estimate`s convert with `Metric.of`."""

    name: str
    value: Optional[float]
    lo: Optional[float] = None
    hi: Optional[float] = None
    n: Optional[int] = None
    variant: str = ""

    @classmethod
    def of(cls, name: str, estimate, variant: str = "") -> "Metric":
        return cls(name, estimate.value, estimate.lo, estimate.hi, estimate.n, variant)

    def row(self) -> tuple:
        return (self.name, self.variant, self.value, self.lo, self.hi, self.n)


def metric_rows(metrics: Iterable[Metric]) -> list:
    return [m.row() for m in metrics]


@dataclass
class Outputs:
    """A result that is only its outputs (a build, a training run): nothing but `outputs()`."""

    values: Dict[str, Any] = field(default_factory=dict)
    metrics: list = field(default_factory=list)

    def outputs(self) -> Dict[str, Any]:
        return self.values

    def metric_rows(self) -> list:
        return metric_rows(self.metrics)
