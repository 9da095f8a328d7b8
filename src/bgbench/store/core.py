"""The SQLite results store: runs with provenance, per-image rows, and metrics.

Predict once, analyse many times: every metric can be recomputed from the per-image tables.
The default location is ~/.bgbench/results.db (or $BGBENCH_DB); `--db` overrides it.
Writing a finished run goes through `recording.py`; this module only knows tables and rows.
Tables come from their declarations (`schema.py`); the challenge's queries are in `challenge.py`.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from ..errors import BgbenchError, with_article
from ..version import __version__
from .challenge import ChallengeTables
from .schema import RUNS_SQL, SCHEMA_VERSION, declared, declared_tables

#: A stored row (runs, predictions, ...): read by column name, `row["model"]`.
Row = sqlite3.Row

#: How long a new connection waits for another process that holds the store (torchrun ranks, shards).
BUSY_TIMEOUT_S = 60.0


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to write-ahead logging, waiting out processes that open it at the same moment.

    Why a loop: SQLite answers a journal-mode change that races another connection with
    "database is locked" at once, without calling the busy handler, so the ranks of a torchrun job
    opening a new store together would fail by chance. A file already in WAL mode needs no change.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not ("locked" in str(exc) or "busy" in str(exc)) or time.monotonic() > deadline:  # not a lock race
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


def is_damage(e: BaseException) -> bool:
    """Whether SQLite's error says the file is damaged or no database: SQLite raises the base class
    itself for those (SQLITE_CORRUPT, SQLITE_NOTADB), and its subclasses for locks, constraints
    and mistakes in bgbench's own SQL, which stay tracebacks."""
    return type(e) is sqlite3.DatabaseError


def unreadable(path, e: sqlite3.DatabaseError) -> BgbenchError:
    """The one-line error for a store SQLite cannot read (a damaged page anywhere in the file)."""
    return BgbenchError(f"the results store {path} cannot be read ({e}): it is damaged or not a results store")


def other_schema(path, version: int) -> BgbenchError:
    """The one-line refusal of a store at a schema version other than this bgbench's."""
    return BgbenchError(f"{path} is a results store of another bgbench (store schema version {version}; bgbench "
                        f"{__version__} reads version {SCHEMA_VERSION}); open it with that bgbench")


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the store at `path`, ready: WAL mode, foreign keys, the schema's version and
    the declared tables. These are the first reads of the file, so a file that is no SQLite
    database, cannot be opened or stays locked past the timeout is one line here, not a traceback.
    A store at another schema version is refused before anything is written to it (version 0 is a
    new file's)."""
    conn = None
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S)
        conn.row_factory = sqlite3.Row
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            conn.close()
            raise other_schema(path, version)
        _use_wal(conn)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute(RUNS_SQL)
        for table in declared_tables():
            conn.execute(table.sql())
        return conn
    except sqlite3.DatabaseError as e:
        if conn is not None:
            conn.close()
        raise BgbenchError(f"{path} is not a SQLite results store bgbench can open ({e})") from None


def default_db_path() -> Path:
    return Path(os.environ.get("BGBENCH_DB", Path.home() / ".bgbench" / "results.db")).expanduser()


class Store(ChallengeTables):
    """A thin, explicit wrapper over one SQLite file.

    `Store(path)` creates the file (and its folder) when it is missing: commands that record runs
    open it so. Commands that only read open it with `create=False`,
    so that a mistyped path is an error rather than a new, empty store left behind.
    """

    def __init__(self, path: Optional[str | Path] = None, create: bool = True):
        self.path = Path(path).expanduser() if path else default_db_path()
        if self.path.is_dir():
            raise BgbenchError(f"{self.path} is a folder, not a results store; name a file (such as "
                               f"{self.path / 'results.db'})")
        if not create and not self.path.is_file():
            raise BgbenchError(f"no results store at {self.path}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BgbenchError(f"cannot make the folder of the results store {self.path}: {e}") from None
        self.conn = _connect(self.path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        self.close()
        if is_damage(exc):  # named here, where the path is known (`with Store(...)` in every command)
            raise unreadable(self.path, exc) from None

    def start_run(self, kind: str, config: dict, model: Optional[str] = None, spec: Optional[dict] = None,
                  data_root: Optional[str] = None, data_fingerprint: Optional[str] = None,
                  seed: Optional[int] = None) -> int:
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO runs (kind, created, status, model, spec, checkpoint_sha256, data_root, "
                "data_fingerprint, seed, config, version) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (kind, _now(), "running", model, _dumps(spec), (spec or {}).get("checkpoint_sha256"), data_root,
                 data_fingerprint, seed, _dumps(config), __version__))
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str = "done", outputs: Optional[dict] = None) -> None:
        with self.conn:
            self.conn.execute("UPDATE runs SET status=?, finished=?, outputs=? WHERE id=?",
                              (status, _now(), _dumps(outputs), run_id))

    def insert(self, table: str, run_id: int, rows: Iterable[tuple]) -> None:
        """Insert (or replace) rows of `table`, each given without its leading run_id."""
        with self.conn:
            self._insert(table, run_id, rows)

    def _insert(self, table: str, run_id: int, rows: Iterable[tuple]) -> None:
        """`insert` inside the caller's transaction."""
        if table not in self.tables():
            schema = declared(table)
            if schema is None:
                raise KeyError(f"no table {table!r} in the results store, and none declared (store.declare_table)")
            self.conn.execute(schema.sql())  # a table declared after the store was opened
        rows = [(run_id, *r) for r in rows]
        if not rows:
            return
        marks = ",".join("?" * len(rows[0]))
        self.conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", rows)

    def tables(self) -> List[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]

    def find_resumable(self, kind: str, model: Optional[str], spec: Optional[dict], data_fingerprint: str,
                       config: dict, statuses: Sequence[str] = ("running",)) -> Optional[int]:
        """The newest unfinished run of exactly this job, if any (what a rerun continues).

        The whole resolved spec takes part (architecture, mean/std, checkpoint sha256, the seed of
        a random init), so a run never continues under another model or another normalization.
        `statuses`: which statuses count as unfinished (a sampled challenge run, 'sampled', can be
        extended).
        """
        marks = ",".join("?" * len(statuses))
        row = self.conn.execute(
            f"SELECT id FROM runs WHERE kind=? AND status IN ({marks}) AND model IS ? AND spec IS ? "
            "AND data_fingerprint=? AND config=? ORDER BY id DESC LIMIT 1",
            (kind, *statuses, model, _dumps(spec), data_fingerprint, _dumps(config))).fetchone()
        return int(row["id"]) if row else None

    def get_run(self, run_id: int) -> Optional[Row]:
        return self.conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()

    def run_row(self, run_id: int, kinds: Sequence[str] = ("eval",)) -> Row:
        """The run's row; a one-line error when it does not exist or is of another kind."""
        row = self.get_run(int(run_id))
        if row is None:
            raise BgbenchError(f"run {run_id} not found in {self.path} (see `bgbench runs`)")
        if row["kind"] not in kinds:
            raise BgbenchError(f"run {run_id} is {with_article(row['kind'])} run; this needs "
                               f"{with_article(' or '.join(kinds))} run")
        return row

    def runs(self, kind: Optional[str] = None) -> List[Row]:
        q = "SELECT * FROM runs" + (" WHERE kind=?" if kind else "") + " ORDER BY id"
        return self.conn.execute(q, (kind,) if kind else ()).fetchall()

    def runs_of_checkpoint(self, kind: str, checkpoint_sha256: str) -> List[Row]:
        """Finished runs of `kind` whose checkpoint has this sha256 (e.g. the training run of a model.pt)."""
        return self.conn.execute("SELECT * FROM runs WHERE kind=? AND status='done' AND checkpoint_sha256=? "
                                 "ORDER BY id", (kind, checkpoint_sha256)).fetchall()

    def predictions(self, run_id: int, variant: Optional[str] = None) -> List[Row]:
        """Per-image predictions of an eval run (one variant, or all), ordered by variant and image."""
        q = "SELECT * FROM predictions WHERE run_id=?" + (" AND variant=?" if variant else "")
        args = (run_id, variant) if variant else (run_id,)
        return self.conn.execute(q + " ORDER BY variant, image_id", args).fetchall()

    def metrics(self, run_id: int) -> List[Row]:
        return self.conn.execute("SELECT * FROM metrics WHERE run_id=? ORDER BY name, variant", (run_id,)).fetchall()

    def run_variants(self, run_id: int) -> List[str]:
        """The variants an eval run holds predictions for, sorted by name."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT variant FROM predictions WHERE run_id=? ORDER BY variant", (run_id,))]

    def train_run_for_checkpoint(self, sha256: str) -> Optional[Row]:
        """The newest training run that wrote the checkpoint with this sha256, if any."""
        return self.conn.execute("SELECT * FROM runs WHERE kind='train' AND checkpoint_sha256=? "
                                 "ORDER BY id DESC LIMIT 1", (sha256,)).fetchone()

    def probe_rows(self, table: str, run_id: int) -> List[Row]:
        """The rows of one run in a measure's table (such as 'probe_noise'), in its declared read
        order; none when the table was never written to (a fresh store)."""
        if not table.isidentifier():
            raise KeyError(f"no table {table!r} in the results store")
        if table not in self.tables():
            return []
        schema = declared(table)
        order = ", ".join((schema.order or schema.key) if schema is not None else ()) or "rowid"
        return self.conn.execute(f"SELECT * FROM {table} WHERE run_id=? ORDER BY {order}", (run_id,)).fetchall()

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dumps(obj) -> Optional[str]:
    """Canonical JSON (sorted keys), so equal configs and specs compare equal as text."""
    return None if obj is None else json.dumps(obj, sort_keys=True)
