"""Stores written by older bgbench versions keep their rows and gain the probes' new columns and tables."""
import sqlite3

import pytest

from bgbench.measures.noise.probe import noise_summary
from bgbench.measures.saliency.metrics import METRICS
from bgbench.store import Store


def test_a_v2_store_gains_the_new_saliency_columns_and_keeps_its_rows(tmp_path):
    from bgbench.measures.saliency.probe import saliency_summary
    db = tmp_path / "v2.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, created TEXT NOT NULL,
            status TEXT NOT NULL, model TEXT, spec TEXT, checkpoint_sha256 TEXT, data_root TEXT,
            data_fingerprint TEXT, seed INTEGER, config TEXT NOT NULL, version TEXT NOT NULL, finished TEXT,
            outputs TEXT);
        CREATE TABLE probe_saliency (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            image_id TEXT NOT NULL, label INTEGER NOT NULL, pred INTEGER NOT NULL, precision REAL, iou REAL,
            dice REAL, density_diff REAL, PRIMARY KEY (run_id, image_id));
        INSERT INTO runs VALUES (1, 'probe_saliency', 't', 'done', 'timm:x', '{}', NULL, '/d', 'fp', 0,
            '{"classes": ["a", "b"]}', '0.1.0', 't', '{}');
        INSERT INTO probe_saliency VALUES (1, 'a/1', 0, 0, 0.25, 0.5, 0.6, 0.1);
        INSERT INTO probe_saliency VALUES (1, 'b/1', 1, 1, 0.75, NULL, NULL, NULL);
        PRAGMA user_version=2;
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 5
        assert store.probe_rows("probe_ablate", 1) == []  # a table new in v5 reads empty before it exists
        rows = [dict(r) for r in store.probe_rows("probe_saliency", 1)]
        assert [(r["image_id"], r["precision"], r["iou"]) for r in rows] == [("a/1", 0.25, 0.5), ("b/1", 0.75, None)]
        assert all(r["coverage_25"] is None and r["ap"] is None for r in rows)
        s = saliency_summary(store, 1)  # old runs still summarise; the measures they lack are empty
        assert s.headline["precision"]["value"] == pytest.approx(0.5) and s.image_mean["ap"]["n"] == 0
        store.insert("probe_saliency", 1, [("c/1", 0, 0, *(0.5,) * len(METRICS))])
        assert len(store.probe_rows("probe_saliency", 1)) == 3
    with Store(db) as store:  # opening again changes nothing
        assert len(store.probe_rows("probe_saliency", 1)) == 3


def test_a_v3_store_gains_the_noise_prediction_column_and_keeps_its_rows(tmp_path):
    db = tmp_path / "v3.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, created TEXT NOT NULL,
            status TEXT NOT NULL, model TEXT, spec TEXT, checkpoint_sha256 TEXT, data_root TEXT,
            data_fingerprint TEXT, seed INTEGER, config TEXT NOT NULL, version TEXT NOT NULL, finished TEXT,
            outputs TEXT);
        CREATE TABLE probe_noise (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            image_id TEXT NOT NULL, label INTEGER NOT NULL, region TEXT NOT NULL, level REAL NOT NULL,
            trial INTEGER NOT NULL, correct INTEGER NOT NULL, PRIMARY KEY (run_id, image_id, region, level, trial));
        INSERT INTO runs VALUES (1, 'probe_noise', 't', 'done', 'timm:x', '{}', NULL, '/d', 'fp', 0,
            '{"levels": [0.5], "kind": "sigma"}', '0.1.0', 't', '{}');
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'fg', 0.5, 0, 1);
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'bg', 0.5, 0, 0);
        PRAGMA user_version=3;
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 5
        rows = [dict(r) for r in store.probe_rows("probe_noise", 1)]
        assert sorted((r["region"], r["correct"], r["pred"]) for r in rows) == [("bg", 0, None), ("fg", 1, None)]
        assert noise_summary(store, 1).curves["fg"][0]["acc"] == 1.0  # old rows still summarise
        store.insert("probe_noise", 1, [("b/1", 1, "fg", 0.5, 0, 0, 3)])
        assert store.probe_rows("probe_noise", 1)[-1]["pred"] == 3


def test_a_v4_store_gains_the_ablate_and_attribution_tables_and_keeps_its_rows(tmp_path):
    db = tmp_path / "v4.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, created TEXT NOT NULL,
            status TEXT NOT NULL, model TEXT, spec TEXT, checkpoint_sha256 TEXT, data_root TEXT,
            data_fingerprint TEXT, seed INTEGER, config TEXT NOT NULL, version TEXT NOT NULL, finished TEXT,
            outputs TEXT);
        CREATE TABLE probe_noise (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            image_id TEXT NOT NULL, label INTEGER NOT NULL, region TEXT NOT NULL, level REAL NOT NULL,
            trial INTEGER NOT NULL, correct INTEGER NOT NULL, pred INTEGER,
            PRIMARY KEY (run_id, image_id, region, level, trial));
        INSERT INTO runs VALUES (1, 'probe_noise', 't', 'done', 'timm:x', '{}', NULL, '/d', 'fp', 0,
            '{"levels": [0.5], "kind": "sigma"}', '0.1.0', 't', '{}');
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'fg', 0.5, 0, 1, 0);
        INSERT INTO probe_noise VALUES (1, 'a/1', 0, 'bg', 0.5, 0, 0, 2);
        PRAGMA user_version=4;
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 5
        assert store.probe_rows("probe_ablate", 1) == [] and store.probe_rows("probe_attribution", 1) == []
        from bgbench.measures.ablation.table import TABLE  # declared: created when its first row is written
        store.insert(TABLE.name, 1, [("a/1", 0, "bg", 0, 1, 0.5)])
        assert [tuple(r)[1:] for r in store.probe_rows(TABLE.name, 1)] == [("a/1", 0, "bg", 0, 1, 0.5)]
        rows = [dict(r) for r in store.probe_rows("probe_noise", 1)]
        assert sorted((r["region"], r["correct"], r["pred"]) for r in rows) == [("bg", 0, 2), ("fg", 1, 0)]
        # v5 noise rows may name an attribute's region; the columns are v4's
        store.insert("probe_noise", 1, [("a/1", 0, "attr:dot", 0.5, 0, 1, 0)])
        assert {r["region"] for r in store.probe_rows("probe_noise", 1)} == {"fg", "bg", "attr:dot"}
