"""Migrations, as a list: `MIGRATIONS[i]` brings a store at `PRAGMA user_version` i to i + 1, keeping
every row. They run in order when a store is opened (`migrate`). Tables that are new in a version
need no migration: the store creates declared tables when they are first used.
"""
from __future__ import annotations

import sqlite3
from typing import Callable, List

from .schema import RUNS_SQL, SCHEMA_VERSION

#: Columns probe_saliency gained in v3 (RIVAL10's mask coverage and average precision), in order.
SALIENCY_V3_COLUMNS = ("coverage_25", "coverage_50", "coverage_75", "ap")


def _columns(conn: sqlite3.Connection, table: str) -> List[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _tables(conn: sqlite3.Connection) -> List[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def _v0_to_v1(conn: sqlite3.Connection) -> None:
    """v1 is the first versioned schema: a store without a version is at most v1."""


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """runs.model/spec become optional (builds have no model), runs gain finished/outputs; predictions
    gain the raw top-5 and superclass columns of 1000-class models."""
    cols = _columns(conn, "runs")
    if cols and "outputs" not in cols:
        conn.execute("PRAGMA foreign_keys=OFF")  # so that dropping the old table cascades nothing
        with conn:
            conn.execute(RUNS_SQL.replace("EXISTS runs (", "EXISTS runs_v2 ("))
            conn.execute(f"INSERT INTO runs_v2 ({', '.join(cols)}) SELECT {', '.join(cols)} FROM runs")
            conn.execute("DROP TABLE runs")
            conn.execute("ALTER TABLE runs_v2 RENAME TO runs")
        conn.execute("PRAGMA foreign_keys=ON")
    pcols = _columns(conn, "predictions")
    with conn:
        for col in ("top5_classes", "top5_probs", "superclass_probs"):
            if pcols and col not in pcols:
                conn.execute(f"ALTER TABLE predictions ADD COLUMN {col} TEXT")


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """probe_saliency gains RIVAL10's mask coverage (t = 0.25, 0.5, 0.75) and average precision;
    older rows keep their values and have NULL there."""
    scols = _columns(conn, "probe_saliency")
    with conn:
        for col in SALIENCY_V3_COLUMNS:
            if scols and col not in scols:
                conn.execute(f"ALTER TABLE probe_saliency ADD COLUMN {col} REAL")


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    """probe_noise gains `pred`, the class predicted on the noisy copy (older rows: NULL); the
    probe_features table is new (created when first used)."""
    ncols = _columns(conn, "probe_noise")
    if ncols and "pred" not in ncols:
        with conn:
            conn.execute("ALTER TABLE probe_noise ADD COLUMN pred INTEGER")


def _v4_to_v5(conn: sqlite3.Connection) -> None:
    """The probe_ablate and probe_attribution tables are new (created when first used); probe_noise
    rows may now have region 'attr:<name>' (same columns). No existing row changes."""


def _v5_to_v6(conn: sqlite3.Connection) -> None:
    """bf16-verified keeps its state in one table, challenge_verified: each foreground's near ties
    (the rows of challenge_near) and the run's audit counts and delta (challenge_state's row, now the
    run's row, image_id ''), so that a run stored mid-way resumes with both.

    In one write transaction that looks at the tables again: the ranks of a torchrun job may open
    one old store together, and then one moves the rows and the others find none to move."""
    old = {"challenge_near", "challenge_state"}
    if not old & set(_tables(conn)):  # a new store, or one moved already
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = set(_tables(conn))
        if tables & old:
            conn.execute("CREATE TABLE IF NOT EXISTS challenge_verified (run_id INTEGER NOT NULL REFERENCES runs(id) "
                         "ON DELETE CASCADE, image_id TEXT NOT NULL, lowest REAL, state TEXT NOT NULL, "
                         "PRIMARY KEY (run_id, image_id))")
        if "challenge_near" in tables:
            conn.execute("INSERT OR REPLACE INTO challenge_verified (run_id, image_id, lowest, state) "
                         "SELECT run_id, image_id, lowest, near FROM challenge_near")
            conn.execute("DROP TABLE challenge_near")
        if "challenge_state" in tables:
            conn.execute("INSERT OR REPLACE INTO challenge_verified (run_id, image_id, lowest, state) "
                         "SELECT run_id, '', NULL, state FROM challenge_state")
            conn.execute("DROP TABLE challenge_state")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


MIGRATIONS: List[Callable[[sqlite3.Connection], None]] = [_v0_to_v1, _v1_to_v2, _v2_to_v3, _v3_to_v4, _v4_to_v5,
                                                          _v5_to_v6]
assert len(MIGRATIONS) == SCHEMA_VERSION


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a store written by an older bgbench up to SCHEMA_VERSION, keeping every row."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for step in MIGRATIONS[version:]:
        step(conn)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
