"""Stores written by older bgbench versions keep their rows and gain the probes' new columns and tables;
bf16-verified's two v5 tables become one, and a run stored in them resumes."""
import multiprocessing
import sqlite3
import sys
from pathlib import Path

import pytest

from bgbench.measures.noise import MEASURE as NOISE
from bgbench.measures.saliency.metrics import METRICS
from bgbench.store import Store


def test_a_v2_store_gains_the_new_saliency_columns_and_keeps_its_rows(tmp_path):
    from bgbench.measures.saliency import MEASURE as SALIENCY
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
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 6
        assert store.probe_rows("probe_ablate", 1) == []  # a table new in v5 reads empty before it exists
        rows = [dict(r) for r in store.probe_rows("probe_saliency", 1)]
        assert [(r["image_id"], r["precision"], r["iou"]) for r in rows] == [("a/1", 0.25, 0.5), ("b/1", 0.75, None)]
        assert all(r["coverage_25"] is None and r["ap"] is None for r in rows)
        s = SALIENCY.read(store, 1)  # old runs still summarise; the measures they lack are empty
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
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 6
        rows = [dict(r) for r in store.probe_rows("probe_noise", 1)]
        assert sorted((r["region"], r["correct"], r["pred"]) for r in rows) == [("bg", 0, None), ("fg", 1, None)]
        assert NOISE.read(store, 1).curves["fg"][0]["acc"] == 1.0  # old rows still summarise
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
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 6
        assert store.probe_rows("probe_ablate", 1) == [] and store.probe_rows("probe_attribution", 1) == []
        from bgbench.measures.ablate import MEASURE as ABLATE
        TABLE = ABLATE.table  # declared: created when its first row is written
        store.insert(TABLE.name, 1, [("a/1", 0, "bg", 0, 1, 0.5)])
        assert [tuple(r)[1:] for r in store.probe_rows(TABLE.name, 1)] == [("a/1", 0, "bg", 0, 1, 0.5)]
        rows = [dict(r) for r in store.probe_rows("probe_noise", 1)]
        assert sorted((r["region"], r["correct"], r["pred"]) for r in rows) == [("bg", 0, 2), ("fg", 1, 0)]
        # v5 noise rows may name an attribute's region; the columns are v4's
        store.insert("probe_noise", 1, [("a/1", 0, "attr:dot", 0.5, 0, 1, 0)])
        assert {r["region"] for r in store.probe_rows("probe_noise", 1)} == {"fg", "bg", "attr:dot"}


MAIN_V5 = Path(__file__).with_name("data") / "store_main_v5.sql"


@pytest.fixture
def store_from_main(tmp_path):
    """The store that bgbench wrote before the store became a package (tests/data/store_main_v5.sql)."""
    db = tmp_path / "main_v5.db"
    con = sqlite3.connect(db)
    con.executescript(MAIN_V5.read_text(encoding="utf-8"))
    con.close()
    return db


def test_a_store_written_by_the_previous_main_reads_back_every_measure(store_from_main):
    """Each probe's summary, recomputed by today's code from the rows the previous main stored,
    gives the metrics that main stored; eval's accuracies come back from its predictions."""
    from bgbench.measures.registry import PROBE_PREFIX, list_measures
    from bgbench.probing.tables import stored_table
    with Store(store_from_main, create=False) as store:
        kinds = {r["kind"] for r in store.runs()}
        probes = [m for m in list_measures("probe") if m.kind in kinds]
        # every probe kind the previous main stored is one today's registry reads back (probes
        # added since have no run there, and need no line here)
        assert {m.kind for m in probes} == {k for k in kinds if k.startswith(PROBE_PREFIX)} and len(probes) >= 5
        for m in probes:
            (run,) = store.runs(m.kind)
            stored = {(r["name"], r["variant"]): (r["value"], r["lo"], r["hi"]) for r in store.metrics(run["id"])}
            fresh = {(name, variant): tuple(None if v is None or v != v else v for v in (value, lo, hi))  # NaN: NULL
                     for name, variant, value, lo, hi, _ in m.read(store, run["id"]).metric_rows()}
            common = set(stored) & set(fresh)
            assert len(common) >= len(stored) - 1, m.name  # at most a new headline metric is added
            for key in common:
                assert fresh[key] == pytest.approx(stored[key]), (m.name, key)
        (ev,) = store.runs("eval")
        table = stored_table(store, ev["id"])
        accuracy = {r["variant"]: r["value"] for r in store.metrics(ev["id"]) if r["name"] == "accuracy"}
        for variant, v in table.variants.items():
            assert float((v.preds == v.labels).mean()) == pytest.approx(accuracy[variant])
        assert store.challenge_results(store.runs("challenge")[0]["id"])


def test_a_store_written_by_the_previous_main_takes_new_runs_and_lists_headlines(store_from_main, tmp_path):
    import json

    import bgbench
    from conftest import run_cli
    from bgbench.variants.synth import write_dataset
    data = tmp_path / "s9"
    write_dataset(data, per_class=1, size=32, seed=0, split="val", progress=False)
    run_id = bgbench.record(bgbench.probe("ablate", "timm:test_resnet", data, progress=False), store_from_main)
    proc = run_cli("runs", "--db", store_from_main, "--json")
    assert proc.returncode == 0, proc.stderr
    listing = {r["id"]: r for r in json.loads(proc.stdout)}
    assert listing[run_id]["kind"] == "probe_ablate" and listing[run_id]["result"].startswith("ablation_acc_drop")
    assert all(r["result"] for r in listing.values())


#: bf16-verified's two tables in a v5 store, as bgbench wrote them (tests/data/store_main_v5.sql)
V5_VERIFIED_TABLES = """
    CREATE TABLE challenge_near (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        image_id TEXT NOT NULL, lowest REAL, near TEXT NOT NULL, PRIMARY KEY (run_id, image_id));
    CREATE TABLE challenge_state (run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        state TEXT NOT NULL);
"""


def _as_v5(db, run_id, raised_delta):
    """The store as v5 kept a bf16-verified run: near ties in challenge_near, the audit counts in
    challenge_state, there with the delta an audit raised before the run was killed."""
    con = sqlite3.connect(db)
    near = con.execute("SELECT run_id, image_id, lowest, state FROM challenge_verified WHERE image_id <> ''").fetchall()
    (state,) = con.execute("SELECT state FROM challenge_verified WHERE run_id=? AND image_id=''", (run_id,)).fetchone()
    con.executescript("DROP TABLE challenge_verified;" + V5_VERIFIED_TABLES)
    con.executemany("INSERT INTO challenge_near VALUES (?, ?, ?, ?)", near)
    con.execute("INSERT INTO challenge_state VALUES (?, json_set(?, '$.delta', ?))", (run_id, state, raised_delta))
    con.execute("PRAGMA user_version=5")
    con.commit()
    con.close()
    return near


def test_a_bf16_verified_run_stored_by_v5_resumes_from_the_one_table(tmp_path):
    """A sampled bf16-verified run, stored the v5 way and killed after an audit raised delta: the
    store opens at v6 with its near ties and audit counts (delta included) in challenge_verified and
    the old tables gone; the run resumes from them (its delta and counts restored, every stored
    survivor the delta reaches re-examined) and ends with fp32's verdicts."""
    from helpers.challenge_toys import colour_model, write_colour_dataset
    from bgbench.measures.challenge.runner import ChallengeConfig, run_challenge
    root = write_colour_dataset(tmp_path / "data", per_class=5, size=16, seed=0)
    model = colour_model()
    cfg = dict(batch_size=32, precision="bf16-verified", seed=1)
    db = tmp_path / "v5" / "r.db"
    db.parent.mkdir()
    with Store(db) as store:
        first = run_challenge(model, root, store, ChallengeConfig(sample=18, **cfg), progress=False)
        state = store.challenge_state(first.run_id)
        survivors = [r["image_id"] for r in store.challenge_results(first.run_id) if not r["fooled"]]
    assert survivors and state["calibration"] > 0 and state["delta"] < 1
    near = _as_v5(db, first.run_id, 1e3)
    assert len(near) == 18
    with Store(db) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == 6
        assert not {"challenge_near", "challenge_state"} & set(store.tables())
        assert store.challenge_state(first.run_id) == {**state, "delta": 1e3}
        assert sorted(r["image_id"] for r in store.challenge_near_ties(first.run_id, 1e3)) == \
            sorted(i for _, i, lowest, _ in near if lowest is not None)
        second = run_challenge(model, root, store, ChallengeConfig(**cfg), progress=False)
        assert second.run_id == first.run_id
        verdicts = {r["image_id"]: r["fooled"] for r in store.challenge_results(second.run_id)}
    with Store(tmp_path / "fp32" / "r.db") as store:
        exact = run_challenge(model, root, store, ChallengeConfig(batch_size=32, seed=1), progress=False)
        assert verdicts == {r["image_id"]: r["fooled"] for r in store.challenge_results(exact.run_id)}
    p = second.precision
    assert p["delta"] == 1e3 and p["calibration"] == first.precision["calibration"]
    assert p["audited"] >= first.precision["audited"] and p["composites"] > first.precision["composites"]
    assert p["reexamined"] + p["researched"] >= len(survivors)


def _open_at_once(paths, barrier, errors):
    """One process of a torchrun job: for each new store, wait for the others, then open it with them."""
    for path in paths:
        barrier.wait()
        try:
            with Store(path) as store:
                store.start_run("eval", {})
        except Exception as exc:  # reported to the parent, which fails the test
            errors.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_store_together_all_succeed(tmp_path):
    """The ranks of a torchrun job open one new store at the same moment; none may fail on the lock race.

    SQLite answers a racing change to WAL mode with "database is locked" without waiting; a rank
    that died of it killed the whole job by chance (seen in test_torchrun_two_processes_match_one).
    """
    ctx = multiprocessing.get_context("spawn" if sys.platform == "darwin" else "fork")
    errors, barrier = ctx.Queue(), ctx.Barrier(4)
    paths = [tmp_path / f"race{attempt}.db" for attempt in range(40)]
    procs = [ctx.Process(target=_open_at_once, args=(paths, barrier, errors)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    assert errors.empty(), errors.get()
    for path in paths:
        with Store.open_existing(path) as store:
            assert len(store.conn.execute("SELECT id FROM runs").fetchall()) == 4
