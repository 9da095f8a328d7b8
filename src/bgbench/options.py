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

#: What --workers says, in the commands that write a dataset (build, synth, edit).
WRITE_WORKERS_HELP = "worker processes (the output does not depend on it; default %(default)s)"
#: What --device says, in the commands whose config declares it.
DEVICE_HELP = "torch device: cpu, cuda or cuda:N (default %(default)s)"
#: What --shard says, in every command that writes a dataset in shards for `bgbench merge` to join.
SHARD_HELP = ("write only shard K of N, K counted from 0 (0 <= K < N: 0/2 and 1/2 are the two halves): its deterministic "
              "share of the images, plus a SHARD_<split>.json record; join the N shard folders with `bgbench merge`")


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
    given = {"required": True if required else None, "choices": None if choices is None else tuple(choices),
             "metavar": metavar, "nargs": nargs, "type": type, "action": action, "dest": dest}
    return {FLAG: {"name": name, "help": help, **{k: v for k, v in given.items() if v is not None},
                   **({} if default is dataclasses.MISSING else {"default": default})}}


def flagged_fields(cls) -> Iterator[Tuple[dataclasses.Field, Dict[str, Any]]]:
    """(field, flag spec) for each field of the dataclass `cls` that declares a flag, in field order."""
    return ((f, f.metadata[FLAG]) for f in dataclasses.fields(cls) if f.metadata.get(FLAG) is not None)


def runtime(metadata: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Field metadata (a flag's, or none) marked as how a job runs rather than what it computes."""
    return {**(metadata or {}), RUNTIME: True}


def identity_fields(cls) -> Tuple[str, ...]:
    """The fields of config dataclass `cls` that change what its job computes (all but the runtime ones)."""
    return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get(RUNTIME))
