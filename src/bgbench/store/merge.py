"""Merging results stores: the finished runs of one store copied into another, each with every row
that hangs from it (metrics, predictions, the measures' tables, the challenge's verdicts).

Why here: a study spread over cluster jobs has each job write a store of its own (SQLite must never
be written by two machines: its locking is unreliable over NFS), and one process then merges them.
Merging is idempotent: a run is identified by its step identity (`IDENTITY`: its kind, model,
resolved spec, weights, data fingerprint, seed and resolved config, less what only says how it ran
(`RUNTIME_CONFIG`); not its id, its times, its data folder or the bgbench version), so merging the
same store twice, or a store whose runs overlap those already held, adds each run once. Unfinished
runs (a job killed mid-step) are left out: the step runs again where it is missing.

A merge only reads its sources: each is opened read-only and must be at this bgbench's schema
version.
"""
from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..errors import BgbenchError
from .core import BUSY_TIMEOUT_S, Store, is_damage, other_schema, unreadable
from .schema import SCHEMA_VERSION

#: The statuses of a finished run (a sampled challenge is finished: it can be extended later).
FINISHED = ("done", "sampled")
#: The runs columns that identify a run: equal in two stores, the run is the same step's.
IDENTITY = ("kind", "model", "spec", "checkpoint_sha256", "data_fingerprint", "seed", "config")
#: Keys of a run's config that say how it ran, not what it computed (eval's count of images read
#: from the pixel cache): a run read from the cache and the same run decoded are one run.
RUNTIME_CONFIG = ("pixels",)


@dataclass
class MergeCount:
    """What merging one store did: runs added, runs the target already held, unfinished runs left out."""

    source: str
    added: int = 0
    present: int = 0
    unfinished: int = 0

    def to_dict(self) -> dict:
        return {"store": self.source, "added": self.added, "present": self.present, "unfinished": self.unfinished}

    def text(self) -> str:
        return (f"{self.source}: {self.added} runs added, {self.present} already there"
                + (f", {self.unfinished} unfinished left out" if self.unfinished else ""))


def quoted(name: str) -> str:
    """An SQL identifier, quoted: a source's own tables may name columns `a)b`, `c;d` or `e--f`."""
    return '"' + name.replace('"', '""') + '"'


def _identity(row) -> Tuple:
    return tuple(_config_identity(row[c]) if c == "config" else row[c] for c in IDENTITY)


def _config_identity(text: str) -> str:
    """A run's config as canonical JSON without its `RUNTIME_CONFIG` keys."""
    try:
        config = json.loads(text)
    except ValueError:  # not bgbench's JSON: compared as it is
        return text
    if not isinstance(config, dict):
        return text
    return json.dumps({k: v for k, v in config.items() if k not in RUNTIME_CONFIG}, sort_keys=True)


def _columns(conn: sqlite3.Connection, table: str) -> List[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({quoted(table)})")]


def _run_tables(conn: sqlite3.Connection) -> List[Tuple[str, List[str], str]]:
    """(table, columns, CREATE sql) of every table whose rows belong to a run (a run_id column)."""
    tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table' AND name <> 'runs' "
                          "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
    return [(name, columns, sql) for name, sql in tables for columns in [_columns(conn, name)] if "run_id" in columns]


def open_source(path: Path, name: Optional[str] = None) -> sqlite3.Connection:
    """A read-only connection to the store at `path` (named `name` in messages), refused in one line
    unless it is a results store at this bgbench's schema version. Read-only: no trigger can fire,
    and the file stays byte for byte as it was."""
    name = name or str(path)
    if not path.is_file():
        raise BgbenchError(f"no results store at {name}")
    conn = None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        conn.row_factory = sqlite3.Row
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        has_runs = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'").fetchone()
    except sqlite3.DatabaseError as e:
        if conn is not None:
            conn.close()
        raise BgbenchError(f"{name} is not a SQLite results store bgbench can open ({e})") from None
    if not has_runs or version != SCHEMA_VERSION:
        conn.close()
        if not has_runs:
            raise BgbenchError(f"{name} is not a results store (it has no runs table)")
        raise other_schema(name, version)
    return conn


def merge_store(target: Store, source: Path, name: Optional[str] = None) -> MergeCount:
    """Copy the finished runs of the store at `source` (named `name` in messages and the count) that
    `target` (an open `Store`) lacks, with their rows, in one write transaction: a merge killed
    midway leaves `target` as it was, and two merges into one target at once add a run once,
    since which runs it holds is read inside the transaction."""
    source = Path(source).expanduser()
    name = name or str(source)
    if source.is_file() and source.resolve() == target.path.resolve():
        raise BgbenchError(f"{name} is the store being merged into; name it once, as OUT")
    count = MergeCount(name)
    with closing(open_source(source, name)) as src:
        try:
            _copy_runs(src, target, count)
        except sqlite3.DatabaseError as e:
            if not is_damage(e) or not _damaged(src):
                raise
            raise unreadable(name, e) from None
    return count


def _damaged(conn: sqlite3.Connection) -> bool:
    """Whether SQLite finds the store damaged (so an error while merging was the source's, not OUT's)."""
    try:
        return conn.execute("PRAGMA quick_check").fetchone()[0] != "ok"
    except sqlite3.DatabaseError:
        return True


def _copy_runs(src: sqlite3.Connection, target: Store, count: MergeCount) -> None:
    tables = _run_tables(src)
    conn = target.conn
    conn.execute("BEGIN IMMEDIATE")  # the write lock first: another merge into `target` waits here
    with conn:  # commits, or rolls back on any error
        held: Set[Tuple] = {_identity(r) for r in conn.execute(
            f"SELECT {', '.join(IDENTITY)} FROM runs WHERE status IN ({','.join('?' * len(FINISHED))})", FINISHED)}
        existing = set(target.tables())
        for table, _, sql in tables:
            if table not in existing:
                conn.execute(sql)
        # what both stores have: a column the source lacks stays NULL, one OUT lacks is not copied
        target_columns: Dict[str, Set[str]] = {t: set(_columns(conn, t)) for t in ["runs", *(t for t, _, _ in tables)]}
        run_columns = [c for c in _columns(src, "runs") if c != "id" and c in target_columns["runs"]]
        for run in src.execute("SELECT * FROM runs ORDER BY id").fetchall():
            if run["status"] not in FINISHED:
                count.unfinished += 1
                continue
            key = _identity(run)
            if key in held:
                count.present += 1
                continue
            new_id = conn.execute(f"INSERT INTO runs ({', '.join(map(quoted, run_columns))}) "
                                  f"VALUES ({','.join('?' * len(run_columns))})", [run[c] for c in run_columns]).lastrowid
            for table, columns, _ in tables:
                cols = [c for c in columns if c in target_columns[table]]
                picked = ", ".join("?" if c == "run_id" else quoted(c) for c in cols)  # the new run's id for the old
                conn.executemany(f"INSERT INTO {quoted(table)} ({', '.join(map(quoted, cols))}) "
                                 f"VALUES ({','.join('?' * len(cols))})",
                                 src.execute(f"SELECT {picked} FROM {quoted(table)} WHERE run_id=? ORDER BY rowid",
                                             (new_id, run["id"])))
            held.add(key)
            count.added += 1


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of the store at `source` (one being written too: SQLite's backup API reads
    committed pages only), written beside `target` and renamed onto it, so that `target` is always
    a whole store. The copy is in rollback-journal mode: it is read on other machines, over a
    network file system, where WAL's shared memory does not work."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    src, dst = sqlite3.connect(str(source), timeout=BUSY_TIMEOUT_S), sqlite3.connect(str(tmp))
    try:
        with closing(src), closing(dst):
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.DatabaseError as e:
        tmp.unlink(missing_ok=True)
        raise BgbenchError(f"cannot copy the results store {source} to {target}: {e}") from None
    os.replace(tmp, target)
