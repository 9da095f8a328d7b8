"""The store's schema: the fixed core (runs, metrics, predictions) and the tables the measures declare.

A measure declares its per-image table once, as a `TableSchema`, and `declare_table` registers it;
the store creates a declared table the first time a row is written to it (and on opening, for the
tables declared by then).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

#: The schema's version, in `PRAGMA user_version`: a store at another version is refused.
SCHEMA_VERSION = 1

#: The runs table: one row per run of any kind, with its provenance (the other tables reference it).
RUNS_SQL = """CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    created TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT,
    spec TEXT,
    checkpoint_sha256 TEXT,
    data_root TEXT,
    data_fingerprint TEXT,
    seed INTEGER,
    config TEXT NOT NULL,
    version TEXT NOT NULL,
    finished TEXT,
    outputs TEXT
)"""


@dataclass(frozen=True)
class TableSchema:
    """A table of per-run rows: its columns after `run_id` as (name, SQL type and constraints), in
    the order rows are written, and its primary key after `run_id` (empty: one row per run).
    `order`: the columns rows are read back by (default: the key)."""

    name: str
    columns: Tuple[Tuple[str, str], ...]
    key: Tuple[str, ...] = ()
    order: Tuple[str, ...] = ()

    def __post_init__(self):
        names = [c for c, _ in self.columns]
        missing = [c for c in (*self.key, *self.order) if c not in names]
        if not self.name.isidentifier() or missing:
            raise ValueError(f"table {self.name!r}: a name must be an identifier and key/order columns exist "
                             f"(missing: {missing})")

    @property
    def column_names(self) -> Tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    @property
    def read_order(self) -> Tuple[str, ...]:
        return self.order or self.key

    def sql(self) -> str:
        """CREATE TABLE IF NOT EXISTS, `run_id` first, referencing its run (rows go with it)."""
        run_id = "INTEGER NOT NULL" if self.key else "INTEGER PRIMARY KEY"  # one row per run without a key
        lines = [f"    run_id {run_id} REFERENCES runs(id) ON DELETE CASCADE"]
        lines += [f"    {name} {kind}" for name, kind in self.columns]
        if self.key:
            lines.append(f"    PRIMARY KEY (run_id, {', '.join(self.key)})")
        return f"CREATE TABLE IF NOT EXISTS {self.name} (\n" + ",\n".join(lines) + "\n)"


_DECLARED: Dict[str, TableSchema] = {}


def declare_table(schema: TableSchema) -> TableSchema:
    """Register a table (the same declaration again is a no-op); returns it."""
    old = _DECLARED.get(schema.name)
    if old is not None and old != schema:
        raise ValueError(f"table {schema.name!r} is already declared with other columns")
    _DECLARED[schema.name] = schema
    return schema


def declared(name: str) -> Optional[TableSchema]:
    return _DECLARED.get(name)


def declared_tables() -> Tuple[TableSchema, ...]:
    return tuple(_DECLARED.values())


#: Scalar results of every run kind, with intervals (`recording.Metric`).
METRICS = declare_table(TableSchema("metrics", (
    ("name", "TEXT NOT NULL"), ("variant", "TEXT NOT NULL DEFAULT ''"), ("value", "REAL"), ("lo", "REAL"),
    ("hi", "REAL"), ("n", "INTEGER")), key=("name", "variant")))

#: Per-image predictions of eval runs: what every analysis recomputes from (predict once, analyse many times).
PREDICTIONS = declare_table(TableSchema("predictions", (
    ("variant", "TEXT NOT NULL"), ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"),
    ("pred", "INTEGER NOT NULL"), ("confidence", "REAL NOT NULL"), ("top5_classes", "TEXT"), ("top5_probs", "TEXT"),
    ("superclass_probs", "TEXT")), key=("variant", "image_id")))
