"""The types of a study's option values: what argparse's types refuse on the command line,
refused in one line where a study file (TOML) or a dict gives the options (`check_types`)."""
from __future__ import annotations

import collections.abc
import math
import numbers
import typing
from pathlib import PurePath
from typing import Any, Dict

from ..errors import BgbenchError

#: A scalar type -> (whether a TOML or JSON value is of it, how a message names it).
_SCALARS = {bool: (lambda v: isinstance(v, bool), "true or false"),
            int: (lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool), "a whole number"),
            float: (lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v),
                    "a finite number"),
            str: (lambda v: isinstance(v, str), "a string")}


def check_types(cls, values: Dict[str, Any], name_of=lambda key: key) -> None:
    """Refuse, in one line, a value of the wrong type for a field of config dataclass `cls` (what a
    study file or a dict gives where the command line's argparse types would have refused it: a
    string where a whole number goes, NaN or infinity where a number goes). Ranges and choices are
    the dataclass's own checks (`__post_init__`), the same for the API, the CLI and a study.

    `name_of(key)` says how a message names the key ('measures.challenge.sample').
    """
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        expected = hints.get(key)
        if expected is not None and not _fits(value, expected):
            raise BgbenchError(f"{name_of(key)}: expected {_describe(expected)}, got {value!r}")


def _fits(value: Any, tp: Any) -> bool:
    """Whether `value` (a TOML or JSON value) is of the annotated type `tp`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or isinstance(tp, typing.TypeVar):
        return True
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return any(_fits(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp in _SCALARS:
        return _SCALARS[tp][0](value)
    if isinstance(tp, type) and issubclass(tp, str):  # the StrEnum kinds (their names)
        return isinstance(value, str)
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return isinstance(value, (str, PurePath))
    if origin in (list, tuple, typing.Sequence, collections.abc.Sequence):
        if not isinstance(value, (list, tuple)):
            return False
        inner = [a for a in args if a is not Ellipsis] or [Any]
        return all(any(_fits(v, a) for a in inner) for v in value)
    if origin is dict or tp is dict:
        return isinstance(value, dict)
    return True


def _describe(tp: Any) -> str:
    """'a whole number', 'a finite number or nothing', 'a list of ...': a type as a message says it."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return " or ".join(dict.fromkeys(_describe(a) for a in args if a is not type(None)))
    if tp in _SCALARS:
        return _SCALARS[tp][1]
    if isinstance(tp, type) and issubclass(tp, str):  # a StrEnum kind: written as one of its names
        return "a string"
    if origin in (list, tuple, typing.Sequence, collections.abc.Sequence):
        inner = [a for a in args if a is not Ellipsis]
        return f"a list of {' or '.join(_describe(a) for a in inner)}" if inner else "a list"
    return getattr(tp, "__name__", str(tp))
