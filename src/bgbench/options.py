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

#: The metadata key under which a field keeps its flag.
FLAG = "bgbench_flag"


def flag(name: str, help: str, *, choices: Optional[Sequence[Any]] = None, metavar: Optional[str] = None,
         nargs: Optional[str] = None, type: Any = None, action: Optional[str] = None, dest: Optional[str] = None,
         default: Any = dataclasses.MISSING) -> Dict[str, Dict[str, Any]]:
    """Field metadata: the flag `name` (such as '--trials') with its help text.

    `help` may use '%(default)s', filled from the field's default. `type` defaults to the
    field's default's type (int, float, str); `action='store_true'` makes a boolean switch.
    `default` overrides the field's default on the command line only (rarely needed: a flag whose
    CLI default differs from the API's says so in its help).
    """
    spec: Dict[str, Any] = {"name": name, "help": help}
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
