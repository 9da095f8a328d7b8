"""Typed rows: a measure's per-image row declared once, as a frozen dataclass, from which its table's
columns (names and SQL types, in field order) follow.

A measure's `rows()` make them, the store writes them (a row iterates over its values in column
order), and its summary reads them by field name; a stored run reads
back into the same class (`of`). The SQL type of a field follows from its annotation: `str` TEXT,
`int` or `bool` INTEGER, `float` REAL, each NOT NULL unless `Optional`; a field whose column says
more (a default) gives it as `field(metadata=sql("..."))`.
"""
from __future__ import annotations

import typing
from dataclasses import fields
from typing import Any, Dict, Iterator, Mapping, Tuple, Union

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
