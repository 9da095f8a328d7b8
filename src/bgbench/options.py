"""Options written once: a config dataclass's field carries its command-line flag in its metadata.

A field declared as

    trials: int = field(default=3, metadata=flag("--trials", "seeded noise draws per image and level"))

is the config, the flag and its help at once: `cli.arguments.add_config_flags` turns such fields
into argparse options, and the command builds the config from the parsed namespace. The check stays in the dataclass's `__post_init__`, so the API and the CLI refuse the
same values. This module imports neither argparse nor torch: configs at every layer use it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

#: Images per forward pass, the default of every job that runs a model over images (eval, the
#: probes, the arms, `predict_items`): declared once, read by their configs, the API and the CLI.
BATCH_SIZE = 64
#: Classes `bgbench predict` shows per image, by default (the API's and the CLI's).
TOP = 5

#: What --workers says, in every command that feeds a model from image files.
WORKERS_HELP = ("processes that decode batches ahead of the model and, on a GPU, threads that make a probe's rows "
                "while the next batches run (default: 1 on the CPU, where the forward is the bottleneck; on a GPU one "
                "per core, 2 to 8, shared among the torchrun processes of a machine)")


def default_workers(device: str = "cpu") -> int:
    """Decoding workers for a model on `device`: 1 beside a CPU model (which already uses every core),
    else this process's share of the machine's cores (torchrun's processes split them), 2 to 8."""
    import os
    if not str(device).startswith("cuda"):
        return 1
    per_machine = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    return min(8, max(2, (os.cpu_count() or 2) // max(1, per_machine)))


def resolve_workers(workers: Optional[int], device: str = "cpu") -> int:
    """`workers` if given (at least 1), else the default for `device`."""
    return default_workers(device) if workers is None else max(1, int(workers))


def workers_field():
    """A config's `workers` field, which is also its --workers flag (None: `default_workers`)."""
    return dataclasses.field(default=None, metadata=runtime(flag("--workers", WORKERS_HELP, type=int)))


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


# ------------------------------------------------------------------------------------------------
# an API function's keywords, read from the config it builds


def default_of(cls, name: str) -> Any:
    """The declared default of field `name` of dataclass `cls` (its default_factory called), what
    argparse, a signature and the docs show: `dataclasses.MISSING` for a field without one."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                return f.default_factory()  # type: ignore[misc]
            return dataclasses.MISSING
    raise KeyError(f"{cls.__name__} has no field {name!r}")


def config_parameters(cls, *, drop: Sequence[str] = (), only: Optional[Sequence[str]] = None) -> list:
    """The fields of config dataclass `cls` as keyword-only parameters, each with the field's own
    default (none for a required field) and type: what an API function that takes the config's
    fields as keywords shows (`signed`), so that an option's default is declared once, in the
    config, and `help()`, an IDE and the CLI's `param_default` read it from there."""
    import inspect
    import typing
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # a hint that does not resolve here: show it as written
        hints = {}
    out = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name in drop or (only is not None and f.name not in only):
            continue
        default = default_of(cls, f.name)
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(f.name, f.type),
                                     default=inspect.Parameter.empty if default is dataclasses.MISSING else default))
    return out


def keyword_parameters(func, *, drop: Sequence[str] = ()) -> list:
    """The parameters of `func` that have a default, as keyword-only parameters: the options of the
    function that does a job's work, shown by the API function that calls it (`signed`)."""
    import inspect
    return [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in inspect.signature(func).parameters.values()
            if p.default is not inspect.Parameter.empty and p.name not in drop
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def signed(*groups: Sequence[Any], open: bool = False):
    """A decorator: the function's signature (`__signature__`, which `help()`, `inspect` and IDEs
    read) is its own parameters followed by those of `groups` (lists of `inspect.Parameter`, such as
    `config_parameters(Config)`; the first of a name wins), in place of its `**options`. The
    function still receives the options that were given, and only those: a config it builds from
    them applies its own defaults, so the signature's defaults are the config's and nothing else.
    `open`: keep `**options` in the signature (options that depend on another argument)."""
    import inspect

    def apply(func):
        own = inspect.signature(func)
        params = [p for p in own.parameters.values() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        names = {p.name for p in params}
        for group in groups:
            for p in group:
                if p.name not in names:
                    params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
                    names.add(p.name)
        if open:
            params += [p for p in own.parameters.values() if p.kind is p.VAR_KEYWORD]
        func.__signature__ = own.replace(parameters=sorted(params, key=lambda p: p.kind))
        return func
    return apply
