"""An API function's keywords, read from the config it builds: a config dataclass's fields as
keyword-only parameters (`config_parameters`), shown as the function's signature (`signed`), and a
field's declared default (`default_of`), which the command line's flags show too."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence


def default_of(cls, name: str) -> Any:
    """The declared default of field `name` of dataclass `cls` (its default_factory called), what
    argparse, a signature and the docs show: `dataclasses.MISSING` for a field without one."""
    f = next((f for f in dataclasses.fields(cls) if f.name == name), None)
    if f is None:
        raise KeyError(f"{cls.__name__} has no field {name!r}")
    if f.default is not dataclasses.MISSING or f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
        return f.default
    return f.default_factory()  # type: ignore[misc]


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
