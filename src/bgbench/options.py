"""Options written once: a config dataclass's field carries its command-line flag in its metadata.

An option used to be written in five places (the config field, its check, the CLI flag, the
pass-through from the parsed arguments and the docstring). A field declared as

    trials: int = field(default=3, metadata=flag("--trials", "seeded noise draws per image and level"))

is the config, the flag and its help at once: `cli.arguments.add_config_flags` turns such fields
into argparse options and `cli.arguments.config_from_args` builds the config back from the parsed
namespace. The check stays in the dataclass's `__post_init__`, so the API and the CLI refuse the
same values. This module imports neither argparse nor torch: configs at every layer use it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

#: Images per forward pass, the default of every job that runs a model over images (eval, the
#: probes, the arms, `predict_items`): declared once, read by their configs, the API and the CLI.
BATCH_SIZE = 64

#: The metadata key under which a field keeps its flag.
FLAG = "bgbench_flag"
#: The metadata key of a field that says how a job runs, not what it computes (a batch size, a
#: device, decoding threads): a run's identity, which a study compares, leaves such fields out.
RUNTIME = "bgbench_runtime"


def flag(name: str, help: str, *, choices: Optional[Sequence[Any]] = None, metavar: Optional[str] = None,
         nargs: Optional[str] = None, type: Any = None, action: Optional[str] = None, dest: Optional[str] = None,
         default: Any = dataclasses.MISSING, required: bool = False) -> Dict[str, Dict[str, Any]]:
    """Field metadata: the flag `name` (such as '--trials') with its help text.

    `help` may use '%(default)s', filled from the field's default. `type` defaults to the
    field's default's type (int, float, str); `action='store_true'` makes a boolean switch and
    `action='boolean_optional'` a --flag/--no-flag pair. `default` overrides the field's default on
    the command line only (a flag whose default the job works out, such as a variant chosen by the
    recipe, is None there and says so in its help); `required`: the command needs it.
    """
    spec: Dict[str, Any] = {"name": name, "help": help}
    if required:
        spec["required"] = True
    for key, value in (("choices", choices), ("metavar", metavar), ("nargs", nargs), ("type", type),
                       ("action", action), ("dest", dest)):
        if value is not None:
            spec[key] = tuple(value) if key == "choices" else value
    if default is not dataclasses.MISSING:
        spec["default"] = default
    return {FLAG: spec}


def flagged_fields(cls) -> Iterator[Tuple[dataclasses.Field, Dict[str, Any]]]:
    """(field, flag spec) for each field of the dataclass `cls` that declares a flag, in field order."""
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(FLAG)
        if spec is not None:
            yield f, spec


def field_default(f: dataclasses.Field) -> Any:
    """A field's default value (calling its default_factory); MISSING when it has none."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def runtime(metadata: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Field metadata (a flag's, or none) marked as how a job runs rather than what it computes."""
    return {**(metadata or {}), RUNTIME: True}


def identity_fields(cls) -> Tuple[str, ...]:
    """The fields of config dataclass `cls` that change what its job computes (all but the runtime ones)."""
    return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get(RUNTIME))


def check_types(cls, values: Dict[str, Any], name_of=lambda key: key) -> None:
    """Refuse, in one line, a value of the wrong type for a field of config dataclass `cls` (what a
    study file or a dict gives where the command line's argparse types would have refused it: a
    string where a whole number goes, NaN or infinity where a number goes). Ranges and choices are
    the dataclass's own checks (`__post_init__`), the same for the API, the CLI and a study.

    `name_of(key)` says how a message names the key ('measures.challenge.sample').
    """
    import typing

    from .errors import BgbenchError
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        expected = hints.get(key)
        if expected is not None and not _fits(value, expected):
            raise BgbenchError(f"{name_of(key)}: expected {_describe(expected)}, got {value!r}")


def _fits(value: Any, tp: Any) -> bool:
    """Whether `value` (a TOML or JSON value) is of the annotated type `tp`."""
    import math
    import numbers
    import typing
    from pathlib import PurePath
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or isinstance(tp, typing.TypeVar):
        return True
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return any(_fits(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if tp is str or (isinstance(tp, type) and issubclass(tp, str)):  # str, and the StrEnum kinds (their names)
        return isinstance(value, str)
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return isinstance(value, (str, PurePath))
    if origin in (list, tuple, typing.Sequence, collections_abc_sequence()):
        if not isinstance(value, (list, tuple)):
            return False
        inner = [a for a in args if a is not Ellipsis] or [Any]
        return all(any(_fits(v, a) for a in inner) for v in value)
    if origin is dict or tp is dict:
        return isinstance(value, dict)
    return True


def collections_abc_sequence():
    import collections.abc
    return collections.abc.Sequence


def _describe(tp: Any) -> str:
    """'a whole number', 'a finite number or nothing', 'a list of ...': a type as a message says it."""
    import typing
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return " or ".join(dict.fromkeys(_describe(a) for a in args if a is not type(None)))
    names = {bool: "true or false", int: "a whole number", float: "a finite number", str: "a string"}
    if tp in names:
        return names[tp]
    if isinstance(tp, type) and issubclass(tp, str):  # a StrEnum kind: written as one of its names
        return "a string"
    if origin in (list, tuple, typing.Sequence, collections_abc_sequence()):
        inner = [a for a in args if a is not Ellipsis]
        return f"a list of {' or '.join(_describe(a) for a in inner)}" if inner else "a list"
    return getattr(tp, "__name__", str(tp))
