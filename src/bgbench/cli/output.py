"""Where commands read, write and print: the results store the command names (and where its path
came from), the folder a run writes its pictures to, results on stdout (a table, or one strict JSON
document with --json), and the status line that says where a run was stored (stderr)."""
from __future__ import annotations
import argparse
import contextlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Optional

from ..errors import BgbenchError
from ..evaluation.metrics import finite_or_none


def to_json(document: Any) -> str:
    """One strict JSON document (no NaN or Infinity: those become null)."""
    return json.dumps(finite_or_none(document), indent=1, allow_nan=False, default=_plain)


def _plain(obj: Any) -> Any:
    """What JSON cannot write by itself: an object's `as_dict()`, anything else as text (a path)."""
    return finite_or_none(obj.as_dict()) if hasattr(obj, "as_dict") else str(obj)


def emit(args: argparse.Namespace, document: Any, text: str) -> int:
    """Print the result: `document` as strict JSON with --json, else `text`; 0, the command's exit status."""
    print(to_json(document) if getattr(args, "json", False) else text)
    return 0


def stored_in(run_id: Optional[int], where, what: str = "run") -> None:
    """The status line that says where a run was recorded (stderr: it is not a result)."""
    from ..console import status
    status(f"{what} {run_id} stored in {where}")


def db_source(args: argparse.Namespace) -> str:
    """Where the store's path came from, as a user would name it: --db, $BGBENCH_DB or the default."""
    return "--db" if getattr(args, "db", None) else "$BGBENCH_DB" if os.environ.get("BGBENCH_DB") \
        else "the default store"


def open_store(args: argparse.Namespace, create: bool = True):
    """The results store the command names. `create=False` for commands that only read: a missing
    store is then a one-line error naming where its path came from, and no file is created."""
    from ..store import Store
    try:
        return Store(args.db, create=create)
    except BgbenchError as e:
        source = db_source(args)
        hint = "; record a run first (e.g. `bgbench eval`) or name a store with --db" \
            if source == "the default store" else ""
        raise BgbenchError(f"{source}: {e}{hint}") from None


def record_dataset_run(args: argparse.Namespace, result, doc: dict, what: str) -> None:
    """Record a dataset writer's run (synth, build, edit) in the store the command names, adding
    its id to `doc`; a shard has no provenance and is recorded once `bgbench merge` joins it."""
    from ..recording import record
    if result.provenance is None:
        return
    with open_store(args) as store:
        doc["run_id"] = record(result, store)
        stored_in(doc["run_id"], store.path, what=f"{what} run")


def new_output_dir(parent: Path, kind: str) -> Path:
    """parent/<kind>_<local time>[-k]: a folder no other run has, made now."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for k in range(1, 1000):
        folder = parent / f"{kind}_{stamp}{f'-{k}' if k > 1 else ''}"
        with contextlib.suppress(FileExistsError):  # another run made it this second: the next name
            folder.mkdir(parents=True)
            return folder
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
