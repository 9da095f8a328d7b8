"""The store's schema: the fixed core (runs, metrics, predictions) and the tables the measures declare.

A measure declares its per-image table once, as a `TableSchema`, and `declare_table` registers it;
the store creates a declared table the first time a row is written to it (and on opening, for the
tables declared by then).

Typed rows (`TableRow`, at the end): a measure's per-image row declared once, as a frozen
dataclass, from which its table's columns (names and SQL types, in field order) follow. A
measure's `rows()` make them, the store writes them (a row iterates over its values in column
order), and its summary reads them by field name; a stored run reads back into the same class
(`of`). The SQL type of a field follows from its annotation: `str` TEXT,
`int` or `bool` INTEGER, `float` REAL, each NOT NULL unless `Optional`; a field whose column says
more (a default) gives it as `field(metadata=sql("..."))`.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple, Union

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

    def sql(self) -> str:
        """CREATE TABLE IF NOT EXISTS, `run_id` first, referencing its run (rows go with it)."""
        run_id = "INTEGER NOT NULL" if self.key else "INTEGER PRIMARY KEY"  # one row per run without a key
        lines = [f"    run_id {run_id} REFERENCES runs(id) ON DELETE CASCADE",
                 *(f"    {name} {kind}" for name, kind in self.columns),
                 *([f"    PRIMARY KEY (run_id, {', '.join(self.key)})"] if self.key else [])]
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


# -- typed rows ----------------------------------------------------------------------------------------
#: A field's Python type -> its column's SQL type.
SQL_TYPES = {str: "TEXT", int: "INTEGER", bool: "INTEGER", float: "REAL"}


def sql(declaration: str) -> Dict[str, str]:
    """A field's metadata that gives its column's SQL type and constraints in full."""
    return {"sql": declaration}


def _sql_type(hint: Any, name: str, owner: str) -> str:
    """'TEXT NOT NULL' for `str`, 'INTEGER' for `Optional[int]`, ..."""
    nullable = False
    if typing.get_origin(hint) is Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else hint
    if hint not in SQL_TYPES:
        raise TypeError(f"{owner}.{name}: a row's field is str, int, bool or float (or Optional of one), "
                        f"not {hint!r}; give its column as field(metadata=sql(...))")
    return SQL_TYPES[hint] + ("" if nullable else " NOT NULL")


class TableRow:
    """Base of a typed row: subclass it as `@dataclass(frozen=True, slots=True)`.

    Iterating a row gives its values in column order, which the store inserts."""

    __slots__ = ()

    @classmethod
    def columns(cls) -> Tuple[Tuple[str, str], ...]:
        """(name, SQL type) of each field, in order: the table's columns after run_id."""
        hints = typing.get_type_hints(cls)
        return tuple((f.name, f.metadata.get("sql") or _sql_type(hints[f.name], f.name, cls.__name__))
                     for f in fields(cls))

    @classmethod
    def names(cls) -> Tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(cls, row: Union[Mapping, Any]):
        """The typed row of a stored one (a `sqlite3.Row` or a mapping, read by column name) or of
        a tuple in column order."""
        if isinstance(row, cls):
            return row
        if isinstance(row, tuple):
            return cls(*row)
        return cls(**{name: row[name] for name in cls.names()})

    def __iter__(self) -> Iterator[Any]:
        return (getattr(self, name) for name in self.__match_args__)

