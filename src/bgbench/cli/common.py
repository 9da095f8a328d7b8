"""The arguments that many subcommands share, defined once, and the helpers to print results.

Defaults are read from the config dataclasses (`config_default`), never typed twice: a default
changed in `EvalConfig` changes `bgbench eval --help` too. Those dataclasses live in torch-free
modules, so building the parser imports no torch.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import json
import math
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from ..classes import Mapping
from ..models.inputs import RESIZE_CHOICES
from ..models.norms import NORMS
from ..protocols import PROTOCOLS

#: Zero-shot label sets (mirrors `models.registry.LABEL_SETS`, kept here so --help imports no torch).
LABEL_SETS = ("auto", "imagenet", "dataset")
#: What --model takes, in every command that runs a model.
MODEL_HELP = ("timm:ARCH, file:PATH, zoo:NAME, openclip:ARCH[@PRETRAINED] or hf:REPO_OR_DIR "
              "(see `bgbench models --schemes`)")

#: What --db says about where the store is when it is not given.
DB_HELP = "SQLite results store (default: $BGBENCH_DB if set, else ~/.bgbench/results.db)"


def config_default(config: type, name: str) -> Any:
    """The default of field `name` of the dataclass `config` (what argparse should show and use)."""
    for f in dataclasses.fields(config):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                return f.default_factory()  # type: ignore[misc]
            raise ValueError(f"{config.__name__}.{name} has no default")
    raise KeyError(f"{config.__name__} has no field {name!r}")


def param_default(func: Callable, name: str) -> Any:
    """The default of parameter `name` of `func`, for the commands whose API is a function."""
    default = inspect.signature(func).parameters[name].default
    if default is inspect.Parameter.empty:
        raise ValueError(f"{func.__name__}({name}) has no default")
    return default


def add_model_args(p: argparse.ArgumentParser, config: Optional[type] = None, required: bool = True,
                   model_help: Optional[str] = None, device: bool = True, model_group=None) -> None:
    """--model, --checkpoint, --trust-checkpoint, --norm, --resize, --labels, --templates, --device, --batch-size.

    `config`: the dataclass whose `batch_size` and `device` defaults the flags show.
    `required=False`: commands where a model is optional (`edit`: the adversarial level only).
    `device=False`: commands that run their model on the CPU only (no --device to ignore).
    `model_group`: a mutually exclusive group that --model joins (`eval`: --model or --predictions).
    """
    add_model_arg(model_group or p, required=required and model_group is None, help=model_help or MODEL_HELP)
    p.add_argument("--checkpoint", help="weights for a timm:ARCH model (bgbench, robustness, state_dict or TorchScript)")
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="allow full unpickling of the checkpoint (runs code from the file: only for trusted files)")
    p.add_argument("--norm", choices=NORMS, default="auto",
                   help="input normalization (auto: from the checkpoint, else IN-9 or ImageNet by label space; "
                        "default %(default)s)")
    add_input_args(p)
    if device:
        add_device_arg(p, config_default(config, "device") if config else "cpu")
    add_batch_size_arg(p, config_default(config, "batch_size") if config else 64)


def add_model_arg(p: argparse.ArgumentParser, required: bool = True, default: Optional[str] = None,
                  help: str = "timm:ARCH, file:PATH or zoo:NAME (see `bgbench models`)") -> None:
    """--model alone (`train` takes only a timm:ARCH, with a default)."""
    p.add_argument("--model", required=required, default=default, help=help)


def add_input_args(p: argparse.ArgumentParser) -> None:
    """--resize, --labels, --templates: how images meet the model, and a zero-shot model's head."""
    p.add_argument("--resize", choices=RESIZE_CHOICES, default="auto",
                   help="images of another size than the model's input: native resizes them to it inside the "
                        "model (recorded), none feeds them as they are (auto: native for openclip: and hf:, "
                        "none for timm:, file:, zoo:; default %(default)s)")
    p.add_argument("--labels", choices=LABEL_SETS, default="auto",
                   help="zero-shot head (openclip:): imagenet (1000 ImageNet classes, then the IN-9 mapping) or "
                        "dataset (the dataset's class folder names); auto: imagenet on IN-9, dataset otherwise "
                        "(default %(default)s)")
    p.add_argument("--templates", default="openai", metavar="openai|simple|FILE",
                   help="zero-shot prompt templates: openai (CLIP's 80), simple (7), or a text file with one "
                        "template per line holding {} (default %(default)s)")


def add_protocol_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--protocol", choices=list(PROTOCOLS),
                   help="a reference protocol that fixes everything that changes a number (mapping argmax, zero-shot "
                        "labels imagenet with the openai templates, resize native, fp32, no ten-crop); recorded, and "
                        "the leaderboard ranks runs of one protocol together")


def add_device_arg(p: argparse.ArgumentParser, default: str = "cpu") -> None:
    p.add_argument("--device", default=default, help="torch device: cpu, cuda or cuda:N (default %(default)s)")


def add_batch_size_arg(p: argparse.ArgumentParser, default: int, what: str = "images per forward pass") -> None:
    p.add_argument("--batch-size", type=int, default=default, help=f"{what} (default %(default)s)")


def add_mapping_arg(p: argparse.ArgumentParser, default: Optional[str] = Mapping.ARGMAX.value) -> None:
    p.add_argument("--mapping", choices=[m.value for m in Mapping], default=default,
                   help="1000-class models: 'argmax' (the paper's rule) or 'superclass' (sum of probabilities)"
                        + (" (default %(default)s)" if default else ""))


def add_class_map_arg(p: argparse.ArgumentParser) -> None:
    """--class-map FILE.json: how a 1000-class ImageNet model reads a dataset other than IN-9 and RIVAL10."""
    p.add_argument("--class-map", metavar="FILE",
                   help="1000-class models on a dataset other than IN-9 and RIVAL10 (whose tables are built in): a "
                        "JSON object {\"<ImageNet index>\": \"<class folder>\"}; unlisted classes map to none "
                        "(always wrong); recorded in the run")


def add_data_arg(p: argparse.ArgumentParser, needs: str = "original/ and fg_mask/") -> None:
    """--data ROOT: an IN-9-layout dataset, or a RIVAL10 release (its root or a split folder)."""
    p.add_argument("--data", required=True,
                   help=f"dataset root with {needs} (the IN-9 layout), or a RIVAL10 release (its root, read at its "
                        f"test split, or ROOT/train)")


def add_seed_arg(p: argparse.ArgumentParser, default: int, what: str) -> None:
    p.add_argument("--seed", type=int, default=default, help=f"{what} (default %(default)s)")


def add_db_arg(p: argparse.ArgumentParser, help: str = DB_HELP) -> None:
    p.add_argument("--db", help=help)


def add_output_args(p: argparse.ArgumentParser,
                    quiet_help: str = "no progress bars (status lines and warnings still go to stderr)") -> None:
    """--json (stdout holds one JSON document and nothing else) and --quiet (no progress)."""
    add_json_arg(p)
    p.add_argument("--quiet", action="store_true", help=quiet_help)


def add_json_arg(p: argparse.ArgumentParser,
                 help: str = "print one JSON document on stdout instead of a table (status stays on stderr)",
                 **kwargs) -> None:
    """--json alone, for commands without progress (`models`; `leaderboard`, where it sets --format)."""
    p.add_argument("--json", **{"action": "store_true", "help": help, **kwargs})


def add_run_arg(p: argparse.ArgumentParser, kinds: str = "eval") -> None:
    """RUN: the id of one stored run (the run selector of the analyses)."""
    p.add_argument("run", type=int, help=f"id of a stored {kinds} run (see `bgbench runs`)")


def add_runs_arg(p: argparse.ArgumentParser, kinds: str = "eval") -> None:
    """RUN [RUN ...]: ids of stored runs."""
    p.add_argument("runs", nargs="+", type=int, metavar="RUN", help=f"ids of stored {kinds} runs (see `bgbench runs`)")


def add_run_filters(p: argparse.ArgumentParser, kinds) -> None:
    """--kind, --model: which stored runs a listing shows."""
    p.add_argument("--kind", help=f"only runs of this kind ({', '.join(kinds)})")
    p.add_argument("--model", help="only runs of this model string")


def add_stored_run_args(p: argparse.ArgumentParser) -> None:
    """RUN, --mapping (re-decide a 1000-class run from its stored outputs), --json, --quiet, --db."""
    add_run_arg(p, "eval")
    p.add_argument("--mapping", choices=[m.value for m in Mapping],
                   help="1000-class runs: re-decide under this mapping from the stored top-5 and superclass "
                        "sums (default: the run's own decisions, made with the mapping it was run with); "
                        "a run of a model with the dataset's own classes has no mapping, and ignores it")
    add_output_args(p)
    add_db_arg(p)


def stored_mapping(store, args: argparse.Namespace) -> Optional[str]:
    """The --mapping to apply to a stored run: None for a run of a model with the dataset's own
    classes (9 outputs for IN-9), where a decision mapping does not apply; a note says so."""
    import json

    from ..console import status
    if args.mapping is None:
        return None
    row = store.get_run(args.run)
    spec = json.loads(row["spec"]) if row is not None and row["spec"] else {}
    if row is not None and spec.get("label_space", "imagenet1k") != "imagenet1k":
        status(f"note: run {args.run}'s model has the dataset's {spec.get('num_classes', '?')} classes as outputs; "
               f"--mapping {args.mapping} applies to 1000-class models only, so its stored predictions are used")
        return None
    return args.mapping


def add_shard_arg(p: argparse.ArgumentParser) -> None:
    """--shard K/N: write only shard K's share of the images, for `bgbench merge` to join."""
    p.add_argument("--shard", metavar="K/N",
                   help="write only shard K of N (0 <= K < N): its deterministic share of the images, plus a "
                        "SHARD_<split>.json record; join the N shard folders with `bgbench merge`")


def create_model(args: argparse.Namespace):
    """The model the shared model arguments name (a zero-shot head reads the class names of --data;
    a --protocol fills in or checks what it fixes)."""
    from .. import protocols
    from ..data.layout import class_folders
    from ..models import create_model as create
    opts = protocols.resolve(getattr(args, "protocol", None), resize=args.resize, labels=args.labels,
                             templates=args.templates)
    return create(args.model, checkpoint=args.checkpoint, trust_checkpoint=args.trust_checkpoint, norm=args.norm,
                  classes=class_folders(getattr(args, "data", None), getattr(args, "split", None) or "val"),
                  device=getattr(args, "device", "cpu"), **opts)


def db_source(args: argparse.Namespace) -> str:
    """Where the store's path came from, as a user would name it: --db, $BGBENCH_DB or the default."""
    if getattr(args, "db", None):
        return "--db"
    if os.environ.get("BGBENCH_DB"):
        return "$BGBENCH_DB"
    return "the default store"


def open_store(args: argparse.Namespace, create: bool = True):
    """The results store the command names. `create=False` for commands that only read: a missing
    store is then a one-line error naming where its path came from, and no file is created."""
    from ..errors import BgbenchError
    from ..store import Store
    try:
        return Store(args.db, create=create)
    except BgbenchError as e:
        source = db_source(args)
        hint = "; record a run first (e.g. `bgbench eval`) or name a store with --db" \
            if source == "the default store" else ""
        raise BgbenchError(f"{source}: {e}{hint}") from None


def strict(obj: Any) -> Any:
    """`obj` with every non-finite float replaced by None, so it serializes as strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "as_dict"):
        return strict(obj.as_dict())
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return strict(obj.tolist())
    return obj


def to_json(document: Any) -> str:
    """One strict JSON document (no NaN or Infinity: those become null)."""
    return json.dumps(strict(document), indent=1, allow_nan=False, default=str)


def emit(args: argparse.Namespace, document: Any, text: str) -> None:
    """Print the result: `document` as strict JSON with --json, else `text`."""
    print(to_json(document) if getattr(args, "json", False) else text)


def stored_in(run_id: Optional[int], where, what: str = "run") -> None:
    """The status line that says where a run was recorded (stderr: it is not a result)."""
    from ..console import status
    status(f"{what} {run_id} stored in {where}")


def new_output_dir(parent: Path, kind: str) -> Path:
    """parent/<kind>_<local time>[-k]: a folder no other run has, made now."""
    from ..errors import BgbenchError
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for k in range(1, 1000):
        folder = parent / f"{kind}_{stamp}{f'-{k}' if k > 1 else ''}"
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise BgbenchError(f"cannot make a new {kind}_{stamp} folder in {parent}; name one with --out")


@contextlib.contextmanager
def run_output_dir(given: Optional[str], store_path: Path, kind: str, writes: bool) -> Iterator[Optional[Path]]:
    """Where a run writes its pictures: `--out` when given, else (when it `writes` any) a new
    `<kind>_<time>/` beside the results store, never the current folder. A failed run leaves no
    empty folder behind."""
    made = new_output_dir(store_path.parent, kind) if writes and not given else None
    try:
        yield Path(given) if given else made
    except BaseException:
        if made is not None and not any(made.iterdir()):
            made.rmdir()
        raise

