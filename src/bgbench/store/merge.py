"""Merging results stores: the finished runs of one store copied into another, each with every row
that hangs from it (metrics, predictions, the measures' tables, the challenge's verdicts).

Why here: a study spread over cluster jobs has each job write a store of its own (SQLite must never
be written by two machines: its locking is unreliable over NFS), and one process then merges them.
Merging is idempotent: a run is identified by its step identity (`IDENTITY`: its kind, model,
resolved spec, weights, data fingerprint, seed and resolved config; not its id, its times, its data
folder or the bgbench version), so merging the same store twice, or a store whose runs overlap those
already held, adds each run once. Unfinished runs (a job killed mid-step) are left out: the step
runs again where it is missing.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Set, Tuple

from ..errors import BgbenchError
from .core import BUSY_TIMEOUT_S, Store

#: The statuses of a finished run (a sampled challenge is finished: it can be extended later).
FINISHED = ("done", "sampled")
#: The runs columns that identify a run: equal in two stores, the run is the same step's.
IDENTITY = ("kind", "model", "spec", "checkpoint_sha256", "data_fingerprint", "seed", "config")


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


def _identity(row) -> Tuple:
    return tuple(row[c] for c in IDENTITY)


def _run_tables(conn: sqlite3.Connection) -> List[Tuple[str, List[str], str]]:
    """(table, columns, CREATE sql) of every table whose rows belong to a run (a run_id column)."""
    out = []
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table' AND name <> 'runs' "
                                  "AND name NOT LIKE 'sqlite_%' ORDER BY name"):
        columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
        if "run_id" in columns:
            out.append((name, columns, sql))
    return out


def merge_store(target: Store, source: Path) -> MergeCount:
    """Copy the finished runs of the store at `source` that `target` (an open `Store`) lacks, with
    their rows, in one transaction (a merge killed midway leaves `target` as it was)."""
    source = Path(source).expanduser()
    if not source.is_file():
        raise BgbenchError(f"no results store at {source}")
    if source.resolve() == target.path.resolve():
        raise BgbenchError(f"{source} is the store being merged into; name it once, as OUT")
    count = MergeCount(str(source))
    with Store.open_existing(source) as src:
        held: Set[Tuple] = {_identity(r) for r in target.conn.execute(
            f"SELECT {', '.join(IDENTITY)} FROM runs WHERE status IN ({','.join('?' * len(FINISHED))})", FINISHED)}
        tables = _run_tables(src.conn)
        run_columns = [r[1] for r in src.conn.execute("PRAGMA table_info(runs)") if r[1] != "id"]
        with target.conn:
            existing = set(target.tables())
            for name, _, sql in tables:
                if name not in existing:
                    target.conn.execute(sql)
            target_columns: Dict[str, Set[str]] = {
                name: {r[1] for r in target.conn.execute(f'PRAGMA table_info("{name}")')} for name, _, _ in tables}
            for run in src.conn.execute("SELECT * FROM runs ORDER BY id").fetchall():
                if run["status"] not in FINISHED:
                    count.unfinished += 1
                    continue
                key = _identity(run)
                if key in held:
                    count.present += 1
                    continue
                cur = target.conn.execute(
                    f"INSERT INTO runs ({', '.join(run_columns)}) VALUES ({','.join('?' * len(run_columns))})",
                    [run[c] for c in run_columns])
                new_id = int(cur.lastrowid)
                for name, columns, _ in tables:
                    cols = [c for c in columns if c in target_columns[name]]
                    rows = src.conn.execute(f'SELECT {", ".join(cols)} FROM "{name}" WHERE run_id=? ORDER BY rowid',
                                            (run["id"],)).fetchall()
                    if not rows:
                        continue
                    at = cols.index("run_id")
                    target.conn.executemany(
                        f'INSERT INTO "{name}" ({", ".join(cols)}) VALUES ({",".join("?" * len(cols))})',
                        [tuple(new_id if i == at else v for i, v in enumerate(r)) for r in rows])
                held.add(key)
                count.added += 1
    return count


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of the store at `source` (one being written too: SQLite's backup API reads
    committed pages only), written beside `target` and renamed onto it, so that `target` is always
    a whole store. The copy is in rollback-journal mode: it is read on other machines, over a
    network file system, where WAL's shared memory does not work."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    src = sqlite3.connect(str(source), timeout=BUSY_TIMEOUT_S)
    dst = sqlite3.connect(str(tmp))
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
        ok = True
    except sqlite3.DatabaseError as e:
        ok, problem = False, e
    finally:
        dst.close()
        src.close()
    if not ok:
        tmp.unlink(missing_ok=True)
        raise BgbenchError(f"cannot copy the results store {source} to {target}: {problem}")
    os.replace(tmp, target)
