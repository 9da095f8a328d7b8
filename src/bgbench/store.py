"""The SQLite results store: runs with provenance, per-image predictions, and metrics.

Predict once, analyse many times: every metric can be recomputed from `predictions`.
The default location is ~/.bgbench/results.db (or $BGBENCH_DB); `--db` overrides it.
Writing a finished run goes through `recording.py`; this module only knows tables and rows.
"""
from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from .errors import BgbenchError
from .version import __version__

#: A stored row (runs, predictions, ...): read by column name, `row["model"]`.
Row = sqlite3.Row

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    created TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT,
    spec TEXT,
    checkpoint_sha256 TEXT,
    data_root TEXT,
    data_fingerprint TEXT,
    seed INTEGER,
    config TEXT NOT NULL,
    version TEXT NOT NULL,
    finished TEXT,
    outputs TEXT
);
CREATE TABLE IF NOT EXISTS predictions (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant TEXT NOT NULL,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    pred INTEGER NOT NULL,
    confidence REAL NOT NULL,
    top5_classes TEXT,
    top5_probs TEXT,
    superclass_probs TEXT,
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
CREATE TABLE IF NOT EXISTS challenge_near (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    lowest REAL,
    near TEXT NOT NULL,
    PRIMARY KEY (run_id, image_id)
);
CREATE TABLE IF NOT EXISTS challenge_state (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    state TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS challenge_bg (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bg_id TEXT NOT NULL,
    bg_class INTEGER NOT NULL,
    asr REAL NOT NULL,
    PRIMARY KEY (run_id, bg_id)
);
CREATE TABLE IF NOT EXISTS probe_noise (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    region TEXT NOT NULL,
    level REAL NOT NULL,
    trial INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    pred INTEGER,
    PRIMARY KEY (run_id, image_id, region, level, trial)
);
CREATE TABLE IF NOT EXISTS probe_saliency (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    pred INTEGER NOT NULL,
    precision REAL,
    iou REAL,
    dice REAL,
    density_diff REAL,
    coverage_25 REAL,
    coverage_50 REAL,
    coverage_75 REAL,
    ap REAL,
    PRIMARY KEY (run_id, image_id)
);
CREATE TABLE IF NOT EXISTS probe_features (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    class_index INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    feature INTEGER NOT NULL,
    contribution REAL NOT NULL,
    weight REAL NOT NULL,
    mean_activation REAL NOT NULL,
    images INTEGER NOT NULL,
    bg_share REAL,
    bg_area REAL NOT NULL,
    spurious INTEGER NOT NULL,
    top_images TEXT NOT NULL,
    top_activations TEXT NOT NULL,
    top_bg_shares TEXT NOT NULL,
    PRIMARY KEY (run_id, class_index, rank)
);
CREATE TABLE IF NOT EXISTS probe_ablate (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    region TEXT NOT NULL,
    pred INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    true_prob REAL NOT NULL,
    PRIMARY KEY (run_id, image_id, region)
);
CREATE TABLE IF NOT EXISTS probe_attribution (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    attribute TEXT NOT NULL,
    feature INTEGER NOT NULL,
    iou REAL NOT NULL,
    PRIMARY KEY (run_id, image_id, attribute, feature)
);
"""


SCHEMA_VERSION = 5
#: Columns probe_saliency gained in v3 (RIVAL10's mask coverage and average precision), in order.
SALIENCY_V3_COLUMNS = ("coverage_25", "coverage_50", "coverage_75", "ap")


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a store written by an older bgbench up to SCHEMA_VERSION, keeping every row.

    v1 -> v2: runs.model/spec become optional (builds have no model), runs gain finished/outputs,
    predictions gain the raw top-5 and superclass columns of 1000-class models.
    v2 -> v3: probe_saliency gains RIVAL10's mask coverage (t = 0.25, 0.5, 0.75) and average
    precision; older rows keep their values and have NULL there.
    v3 -> v4: probe_noise gains `pred`, the class predicted on the noisy copy (what the report's
    noise gallery shows; older rows have NULL there), and the probe_features table (spurious-feature
    discovery) is new: SCHEMA creates it empty.
    v4 -> v5: the probe_ablate (attribute/object/background ablation) and probe_attribution
    (feature IoU with attribute masks) tables, new and empty: SCHEMA creates them, no existing row
    changes. probe_noise rows may now have region 'attr:<name>' (same columns, TEXT already).
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if version < 2 and "runs" in tables:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
        if "outputs" not in cols:
            conn.execute("PRAGMA foreign_keys=OFF")  # so that dropping the old table cascades nothing
            with conn:
                conn.execute(SCHEMA.split(";")[0].replace("EXISTS runs (", "EXISTS runs_v2 ("))
                conn.execute(f"INSERT INTO runs_v2 ({', '.join(cols)}) SELECT {', '.join(cols)} FROM runs")
                conn.execute("DROP TABLE runs")
                conn.execute("ALTER TABLE runs_v2 RENAME TO runs")
            conn.execute("PRAGMA foreign_keys=ON")
        pcols = [r[1] for r in conn.execute("PRAGMA table_info(predictions)")]
        with conn:
            for col in ("top5_classes", "top5_probs", "superclass_probs"):
                if pcols and col not in pcols:
                    conn.execute(f"ALTER TABLE predictions ADD COLUMN {col} TEXT")
    if version < 3 and "probe_saliency" in tables:
        scols = [r[1] for r in conn.execute("PRAGMA table_info(probe_saliency)")]
        with conn:
            for col in SALIENCY_V3_COLUMNS:
                if col not in scols:
                    conn.execute(f"ALTER TABLE probe_saliency ADD COLUMN {col} REAL")
    if version < 4 and "probe_noise" in tables:
        if "pred" not in [r[1] for r in conn.execute("PRAGMA table_info(probe_noise)")]:
            with conn:
                conn.execute("ALTER TABLE probe_noise ADD COLUMN pred INTEGER")
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def default_db_path() -> Path:
    return Path(os.environ.get("BGBENCH_DB", Path.home() / ".bgbench" / "results.db")).expanduser()


class Store:
    """A thin, explicit wrapper over one SQLite file.

    `Store(path)` creates the file (and its folder) when it is missing: commands that record runs
    open it so. Commands that only read open it with `create=False` (or `Store.open_existing`),
    so that a mistyped path is an error rather than a new, empty store left behind.
    """

    def __init__(self, path: Optional[str | Path] = None, create: bool = True):
        self.path = Path(path).expanduser() if path else default_db_path()
        if not create and not self.path.is_file():
            raise BgbenchError(f"no results store at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=60)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        _migrate(self.conn)
        self.conn.executescript(SCHEMA)

    @classmethod
    def open_existing(cls, path: Optional[str | Path] = None) -> "Store":
        """Open a store that must already exist (a read never creates one)."""
        return cls(path, create=False)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

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
            raise KeyError(f"no table {table!r} in the results store")
        rows = [(run_id, *r) for r in rows]
        if not rows:
            return
        marks = ",".join("?" * len(rows[0]))
        self.conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", rows)

    def tables(self) -> List[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]

    def add_metric(self, run_id: int, name: str, value: float, lo: Optional[float] = None,
                   hi: Optional[float] = None, n: Optional[int] = None, variant: str = "") -> None:
        self.insert("metrics", run_id, [(name, variant, value, lo, hi, n)])

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

    def add_challenge_results(self, run_id: int, rows: Iterable[tuple], near_ties: Iterable[tuple] = (),
                              state: Optional[dict] = None) -> None:
        """Challenge progress, in one transaction (so a killed run never keeps half of it).

        rows: (image_id, label, clean_pred, fooled, pairs, fooling_bg, fooling_pred);
        near_ties (bf16-verified): (image_id, lowest margin or None, near-tie JSON);
        state (bf16-verified): the run's audit counts and delta so far.
        """
        with self.conn:
            self._insert("challenge_fg", run_id, rows)
            self._insert("challenge_near", run_id, near_ties)
            if state is not None:  # the larger delta wins: another rank may have raised it meanwhile
                self.conn.execute(
                    "INSERT INTO challenge_state (run_id, state) VALUES (?1, ?2) ON CONFLICT(run_id) DO UPDATE SET "
                    "state = json_set(?2, '$.delta', max(coalesce(json_extract(challenge_state.state, '$.delta'), "
                    "json_extract(?2, '$.delta')), json_extract(?2, '$.delta')))", (run_id, _dumps(state)))

    def raise_challenge_delta(self, run_id: int, delta: float) -> None:
        """bf16-verified: an audit raised delta; store it now (unless a larger one is stored), so that
        a run killed before its survivors are re-examined re-examines them when it resumes."""
        with self.conn:
            self.conn.execute(
                "INSERT INTO challenge_state (run_id, state) VALUES (?1, json_object('delta', ?2)) "
                "ON CONFLICT(run_id) DO UPDATE SET state = json_set(challenge_state.state, '$.delta', "
                "max(coalesce(json_extract(challenge_state.state, '$.delta'), ?2), ?2))", (run_id, float(delta)))

    def challenge_near_ties(self, run_id: int, at_most: float) -> List[sqlite3.Row]:
        """bf16-verified: (image_id, near) of the foregrounds with a kept margin at or below `at_most`."""
        return self.conn.execute("SELECT image_id, near FROM challenge_near WHERE run_id=? AND lowest IS NOT NULL "
                                 "AND lowest <= ? ORDER BY image_id", (run_id, float(at_most))).fetchall()

    def challenge_state(self, run_id: int) -> Optional[dict]:
        """bf16-verified: the audit counts and delta stored with the run's progress, if any."""
        row = self.conn.execute("SELECT state FROM challenge_state WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row["state"]) if row else None

    def challenge_results(self, run_id: int) -> List[Row]:
        return self.conn.execute("SELECT * FROM challenge_fg WHERE run_id=? ORDER BY image_id", (run_id,)).fetchall()

    def get_run(self, run_id: int) -> Optional[Row]:
        return self.conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()

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

    def challenge_backgrounds(self, run_id: int) -> List[Row]:
        """Per background of a --full challenge run: bg_id, bg_class, asr (empty for other runs)."""
        return self.conn.execute("SELECT bg_id, bg_class, asr FROM challenge_bg WHERE run_id=? ORDER BY bg_id",
                                 (run_id,)).fetchall()

    def has_challenge_backgrounds(self, run_id: int) -> bool:
        """Whether a challenge run stored attack success rates (it ran with --full)."""
        return self.conn.execute("SELECT 1 FROM challenge_bg WHERE run_id=? LIMIT 1", (run_id,)).fetchone() is not None

    def train_run_for_checkpoint(self, sha256: str) -> Optional[Row]:
        """The newest training run that wrote the checkpoint with this sha256, if any."""
        return self.conn.execute("SELECT * FROM runs WHERE kind='train' AND checkpoint_sha256=? "
                                 "ORDER BY id DESC LIMIT 1", (sha256,)).fetchone()

    def feature_rows(self, run_id: int) -> List[Row]:
        """The ranked features of a probe_features run, by class index, then rank."""
        return self.conn.execute("SELECT * FROM probe_features WHERE run_id=? ORDER BY class_index, rank",
                                 (run_id,)).fetchall()

    def probe_rows(self, table: str, run_id: int) -> List[Row]:
        """The per-image rows of a probe run (`table`: 'probe_noise', 'probe_saliency', 'probe_ablate',
        'probe_attribution'), by image id."""
        if not table.startswith("probe_") or table not in self.tables():
            raise KeyError(f"no probe table {table!r} in the results store")
        columns = [c[1] for c in self.conn.execute(f"PRAGMA table_info({table})")]
        order = "image_id" if "image_id" in columns else "rowid"  # probe_features: one row per (class, rank)
        return self.conn.execute(f"SELECT * FROM {table} WHERE run_id=? ORDER BY {order}", (run_id,)).fetchall()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dumps(obj) -> Optional[str]:
    """Canonical JSON (sorted keys), so equal configs and specs compare equal as text."""
    return None if obj is None else json.dumps(obj, sort_keys=True)
