"""The arguments that many subcommands share, defined once.

Defaults are read from the config dataclasses (`signatures.default_of`), never typed twice: a default
changed in `EvalConfig` changes `bgbench eval --help` too. A config field that declares its flag
(`options.flag`) becomes an argument with `add_config_flags`; the model flags are `ModelOptions`'s.
Those dataclasses live in torch-free modules, so building the parser imports no torch.
"""
from __future__ import annotations
import argparse
import dataclasses
import inspect
from typing import Any, Callable, Optional
from ..classes import IMAGENET1K, Mapping
from ..options import DEVICE_HELP, SHARD_HELP
from ..signatures import default_of


#: What --db says about where the store is when it is not given.
DB_HELP = "SQLite results store (default: $BGBENCH_DB if set, else ~/.bgbench/results.db)"


def param_default(func: Callable, name: str) -> Any:
    """The default of parameter `name` of `func`, for the commands whose API is a function."""
    default = inspect.signature(func).parameters[name].default
    if default is inspect.Parameter.empty:
        raise ValueError(f"{func.__name__}({name}) has no default")
    return default


def add_model_arg(p: argparse.ArgumentParser, help: str) -> None:
    """--model, repeated (`profile` takes several models)."""
    p.add_argument("--model", required=True, action="append", metavar="M", help=help)


def add_run_filters(p: argparse.ArgumentParser, kinds) -> None:
    """--kind, --model: which stored runs a listing shows."""
    p.add_argument("--kind", help=f"only runs of this kind ({', '.join(kinds)})")
    p.add_argument("--model", help="only runs of this model string")


def add_device_arg(p: argparse.ArgumentParser, default: str = "cpu") -> None:
    p.add_argument("--device", default=default, help=DEVICE_HELP)


def add_seed_arg(p: argparse.ArgumentParser, default: int, what: str) -> None:
    p.add_argument("--seed", type=int, default=default, help=f"{what} (default %(default)s)")


def add_db_arg(p: argparse.ArgumentParser, help: str = DB_HELP) -> None:
    p.add_argument("--db", help=help)


def add_output_args(p: argparse.ArgumentParser,
                    quiet_help: str = "no progress bars (status lines and warnings still go to stderr)",
                    db: Optional[str] = DB_HELP) -> None:
    """--json (stdout holds one JSON document and nothing else), --quiet (no progress), and --db with
    help `db` (None: no --db, or one the command adds itself)."""
    add_json_arg(p)
    p.add_argument("--quiet", action="store_true", help=quiet_help)
    if db:
        add_db_arg(p, help=db)


def add_json_arg(p: argparse.ArgumentParser,
                 help: str = "print one JSON document on stdout instead of a table (status stays on stderr)",
                 **kwargs) -> None:
    """--json alone, for commands without progress (`models`; `leaderboard`, where it sets --format)."""
    p.add_argument("--json", **{"action": "store_true", "help": help, **kwargs})


def add_stored_run_args(p: argparse.ArgumentParser) -> None:
    """RUN, --mapping (re-decide a 1000-class run from its stored outputs), --json, --quiet, --db."""
    p.add_argument("run", type=int, help="id of a stored eval run (see `bgbench runs`)")
    p.add_argument("--mapping", choices=[m.value for m in Mapping],
                   help="1000-class runs: re-decide under this mapping from the stored top-5 and superclass "
                        "sums (default: the run's own decisions, made with the mapping it was run with); "
                        "a run of a model with the dataset's own classes has no mapping, and ignores it")
    add_output_args(p)


def stored_mapping(store, args: argparse.Namespace) -> Optional[str]:
    """The --mapping to apply to a stored run: None for a run of a model with the dataset's own
    classes (9 outputs for IN-9), where a decision mapping does not apply; a note says so."""
    import json

    from ..console import status
    if args.mapping is None:
        return None
    row = store.get_run(args.run)
    spec = json.loads(row["spec"]) if row is not None and row["spec"] else {}
    if row is not None and spec.get("label_space", IMAGENET1K) != IMAGENET1K:
        status(f"note: run {args.run}'s model has the dataset's {spec.get('num_classes', '?')} classes as outputs; "
               f"--mapping {args.mapping} applies to 1000-class models only, so its stored predictions are used")
        return None
    return args.mapping


def add_shard_arg(p: argparse.ArgumentParser) -> None:
    """--shard K/N: write only shard K's share of the images, for `bgbench merge` to join."""
    p.add_argument("--shard", metavar="K/N", help=SHARD_HELP)


def config_options(args: argparse.Namespace, config: type) -> dict:
    """The options of `config` that its flags (`add_config_flags`) parsed into `args`, by field name."""
    from ..options import flagged_fields
    return {f.name: getattr(args, spec.get("dest", f.name)) for f, spec in flagged_fields(config)}


def add_config_flags(p, config: type, skip: tuple = (), only: Optional[tuple] = None) -> None:
    """Every field of `config` that declares a flag (`options.flag`), in field order (`only`: just
    those, in that order): its name, help and choices from the metadata, its default the field's."""
    from ..options import flagged_fields
    specs = {f.name: (f, spec) for f, spec in flagged_fields(config) if f.name not in skip}
    for f, declared in (specs.values() if only is None else [specs[name] for name in only]):
        spec = dict(declared)
        default = spec.pop("default", default_of(config, f.name))
        if default is dataclasses.MISSING:  # a field the job cannot do without: its flag is required
            default = None
            spec.setdefault("type", str)
        if spec.get("action") == "boolean_optional":
            spec["action"] = argparse.BooleanOptionalAction
        if spec.get("action") is None and "type" not in spec and default is not None and not isinstance(default, bool):
            spec["type"] = type(default)
        if "choices" in spec:
            spec["choices"] = list(spec["choices"])
        # `spec` is unpacked after its name and dest are popped; a tuple default shows and parses as a list
        p.add_argument(spec.pop("name"), dest=spec.pop("dest", f.name),
                       default=list(default) if isinstance(default, tuple) else default, **spec)


def add_model_args(p: argparse.ArgumentParser, config: Optional[type] = None, required: bool = True,
                   model_help: Optional[str] = None, device: bool = True, model_group=None) -> None:
    """The model flags (`ModelOptions`'s: --model, --checkpoint, --pretrained, --class-map,
    --trust-checkpoint, --norm, --resize, --labels, --templates, --channels-last, --compile), then
    --device and --batch-size.

    `config`: the dataclass whose `batch_size` and `device` defaults the flags show.
    `required=False`: commands where a model is optional (`edit`: the adversarial level only).
    `device=False`: commands that run their model on the CPU only (no --device to ignore).
    `model_group`: a mutually exclusive group that --model joins (`eval`: --model or --predictions).
    """
    from ..models.options import MODEL_HELP, ModelOptions
    (model_group or p).add_argument("--model", required=required and model_group is None,
                                    help=model_help or MODEL_HELP)
    add_config_flags(p, ModelOptions, skip=("model",))
    if device:
        add_device_arg(p, default_of(config, "device") if config else "cpu")
        p.add_argument("--no-cache", action="store_true",
                       help="decode every image again instead of reading the decoded-pixel cache, and write none "
                            "(`bgbench cache` lists and clears it)")
    p.add_argument("--batch-size", type=int, default=default_of(config, "batch_size") if config else 64,
                   help="images per forward pass (default %(default)s)")


def model_options(args: argparse.Namespace):
    """The `ModelOptions` the parsed model flags name, with the dataset a zero-shot head reads (--data,
    --split), the device and any --protocol."""
    from ..models.options import ModelOptions
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(ModelOptions) if hasattr(args, f.name)}
    return ModelOptions(**{**given, "split": getattr(args, "split", None) or "val"})


def load_model(args: argparse.Namespace):
    """The model the shared model arguments name, through the one door (`bgbench.load_model`)."""
    from ..models.options import load_model as door
    return door(**dataclasses.asdict(model_options(args)))
