"""The SQLite results store: runs with provenance, per-image predictions, and metrics.

Predict once, analyse many times: every metric can be recomputed from `predictions`.
The default location is ~/.bgbench/results.db (or $BGBENCH_DB); `--db` overrides it.
"""
from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

import numpy as np

from . import __version__

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    created TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT NOT NULL,
    spec TEXT NOT NULL,
    checkpoint_sha256 TEXT,
    data_root TEXT,
    data_fingerprint TEXT,
    seed INTEGER,
    config TEXT NOT NULL,
    version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS predictions (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant TEXT NOT NULL,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    pred INTEGER NOT NULL,
    confidence REAL NOT NULL,
    PRIMARY KEY (run_id, variant, image_id)
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    variant TEXT NOT NULL DEFAULT '',
    value REAL, lo REAL, hi REAL, n INTEGER,
    PRIMARY KEY (run_id, name, variant)
);
CREATE TABLE IF NOT EXISTS challenge_fg (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    clean_pred INTEGER NOT NULL,
    fooled INTEGER NOT NULL,
    pairs INTEGER NOT NULL,
    fooling_bg TEXT,
    fooling_pred INTEGER,
    PRIMARY KEY (run_id, image_id)
);
CREATE TABLE IF NOT EXISTS challenge_bg (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bg_id TEXT NOT NULL,
    bg_class INTEGER NOT NULL,
    asr REAL NOT NULL,
    PRIMARY KEY (run_id, bg_id)
);
"""


def default_db_path() -> Path:
    return Path(os.environ.get("BGBENCH_DB", Path.home() / ".bgbench" / "results.db")).expanduser()


class Store:
    """A thin, explicit wrapper over one SQLite file."""

    def __init__(self, path: Optional[str | Path] = None):
        self.path = Path(path).expanduser() if path else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=60)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.executescript(SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def start_run(self, kind: str, model: str, spec: dict, config: dict, data_root: Optional[str] = None,
                  data_fingerprint: Optional[str] = None, seed: Optional[int] = None) -> int:
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO runs (kind, created, status, model, spec, checkpoint_sha256, data_root, "
                "data_fingerprint, seed, config, version) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (kind, datetime.now(timezone.utc).isoformat(timespec="seconds"), "running", model,
                 json.dumps(spec), spec.get("checkpoint_sha256"), data_root, data_fingerprint, seed,
                 json.dumps(config, sort_keys=True), __version__))
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str = "done") -> None:
        with self.conn:
            self.conn.execute("UPDATE runs SET status=? WHERE id=?", (status, run_id))

    def add_predictions(self, run_id: int, variant: str, image_ids: Iterable[str], labels: np.ndarray,
                        preds: np.ndarray, conf: np.ndarray) -> None:
        rows = [(run_id, variant, i, int(y), int(p), float(c)) for i, y, p, c in zip(image_ids, labels, preds, conf)]
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO predictions VALUES (?,?,?,?,?,?)", rows)

    def add_metric(self, run_id: int, name: str, value: float, lo: Optional[float] = None,
                   hi: Optional[float] = None, n: Optional[int] = None, variant: str = "") -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?)",
                              (run_id, name, variant, value, lo, hi, n))

    def find_resumable(self, kind: str, model: str, checkpoint_sha256: Optional[str], data_fingerprint: str,
                       config: dict, statuses: Sequence[str] = ("running",)) -> Optional[int]:
        """The newest unfinished run of exactly this job, if any (what a rerun continues).

        `statuses`: which statuses count as unfinished (a sampled challenge run, 'sampled', can be extended)."""
        marks = ",".join("?" * len(statuses))
        row = self.conn.execute(
            f"SELECT id FROM runs WHERE kind=? AND status IN ({marks}) AND model=? AND checkpoint_sha256 IS ? "
            "AND data_fingerprint=? AND config=? ORDER BY id DESC LIMIT 1",
            (kind, *statuses, model, checkpoint_sha256, data_fingerprint,
             json.dumps(config, sort_keys=True))).fetchone()
        return int(row["id"]) if row else None

    def add_challenge_results(self, run_id: int, rows: Iterable[tuple]) -> None:
        """rows: (image_id, label, clean_pred, fooled, pairs, fooling_bg, fooling_pred)."""
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO challenge_fg VALUES (?,?,?,?,?,?,?,?)",
                                  [(run_id, *r) for r in rows])

    def challenge_results(self, run_id: int) -> List[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM challenge_fg WHERE run_id=? ORDER BY image_id", (run_id,)).fetchall()

    def add_challenge_asr(self, run_id: int, rows: Iterable[tuple]) -> None:
        """rows: (bg_id, bg_class, asr)."""
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO challenge_bg VALUES (?,?,?,?)", [(run_id, *r) for r in rows])

    def run(self, run_id: int) -> Optional[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()

    def runs(self, kind: Optional[str] = None) -> List[sqlite3.Row]:
        q = "SELECT * FROM runs" + (" WHERE kind=?" if kind else "") + " ORDER BY id"
        return self.conn.execute(q, (kind,) if kind else ()).fetchall()

    def predictions(self, run_id: int, variant: str) -> List[sqlite3.Row]:
        return self.conn.execute("SELECT image_id, label, pred, confidence FROM predictions "
                                 "WHERE run_id=? AND variant=? ORDER BY image_id", (run_id, variant)).fetchall()

    def metrics(self, run_id: int) -> List[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM metrics WHERE run_id=? ORDER BY name, variant", (run_id,)).fetchall()
