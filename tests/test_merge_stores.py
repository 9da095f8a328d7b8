"""`bgbench merge-stores OUT STORE...`: every finished run of the stores, with all its rows, lands in
OUT once, however often a store is merged and whatever runs two stores share; counted here with
sqlite3, not with bgbench's own readers."""
import hashlib
import json
import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest

from bgbench.store import SCHEMA_VERSION
from conftest import assert_one_line_error, run_cli

#: A store with a run of every measure (see tests/test_stored_runs.py).
MAIN = Path(__file__).with_name("data") / "store_main.sql"


def _rows(db, table, run_id):
    """A run's rows in `table` without their run_id, sorted (read with sqlite3)."""
    with sqlite3.connect(db) as conn:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != "run_id"]
        return sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE run_id=?", (run_id,)).fetchall())


def _runs(db):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, kind, model, status FROM runs ORDER BY id").fetchall()


@pytest.fixture(scope="module")
def stores(synth_root, tmp_path_factory):
    """A: an eval and a sampled challenge of test_resnet; B: the same eval (an overlap) and an eval of
    test_efficientnet."""
    folder = tmp_path_factory.mktemp("stores")
    a, b = folder / "a.db", folder / "b.db"
    for db, model in ((a, "timm:test_resnet"), (b, "timm:test_resnet"), (b, "timm:test_efficientnet")):
        assert run_cli("eval", "--model", model, "--data", synth_root, "--db", db, "--quiet").returncode == 0
    assert run_cli("challenge", "--model", "timm:test_resnet", "--data", synth_root, "--sample", "4", "--db", a,
                   "--quiet").returncode == 0
    return a, b


def test_merging_twice_or_overlapping_stores_adds_each_run_once(stores, tmp_path):
    a, b = stores
    out = tmp_path / "out.db"
    first = run_cli("merge-stores", out, a, b, "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert [(s["added"], s["present"]) for s in doc["stores"]] == [(2, 0), (1, 1)]  # B's resnet eval is A's
    again = run_cli("merge-stores", out, b, a, "--json")
    assert json.loads(again.stdout)["added"] == 0
    runs = _runs(out)
    assert [(k, m) for _, k, m, _ in runs] == [("eval", "timm:test_resnet"), ("challenge", "timm:test_resnet"),
                                              ("eval", "timm:test_efficientnet")]
    # every row of every run came along, under the run's new id
    for (src, src_id), (_, out_id) in zip([(a, 1), (a, 2), (b, 2)], [(r[0], r[0]) for r in runs]):
        for table in ("predictions", "metrics", "challenge_fg"):
            assert _rows(out, table, out_id) == _rows(src, table, src_id), (table, src, src_id)
    assert len(_rows(out, "predictions", 1)) > 0 and len(_rows(out, "challenge_fg", 2)) == 4
    with sqlite3.connect(out) as conn:  # nothing else, and nothing twice
        assert conn.execute("SELECT count(*) FROM predictions").fetchone()[0] == \
            len(_rows(a, "predictions", 1)) + len(_rows(b, "predictions", 2))
    assert "0 runs added" in run_cli("merge-stores", out, a).stdout


def test_an_unfinished_run_is_left_out(stores, tmp_path):
    a, _ = stores
    killed = tmp_path / "killed.db"
    shutil.copy(a, killed)
    with sqlite3.connect(killed) as conn:  # the challenge killed midway: its verdicts so far, never finished
        conn.execute("UPDATE runs SET status='running' WHERE kind='challenge'")
    proc = run_cli("merge-stores", tmp_path / "out.db", killed, "--json")
    assert json.loads(proc.stdout)["stores"][0] == {"store": str(killed), "added": 1, "present": 0, "unfinished": 1}
    assert [r[1] for r in _runs(tmp_path / "out.db")] == ["eval"]
    with sqlite3.connect(tmp_path / "out.db") as conn:
        assert conn.execute("SELECT count(*) FROM challenge_fg").fetchone()[0] == 0


def test_bad_stores_are_one_line_errors(stores, tmp_path):
    a, _ = stores
    assert_one_line_error(run_cli("merge-stores", tmp_path / "out.db", tmp_path / "nope.db"), "nope.db")
    assert not (tmp_path / "out.db").exists()  # nothing was created
    (tmp_path / "junk.db").write_text("not a store")
    assert_one_line_error(run_cli("merge-stores", tmp_path / "out.db", tmp_path / "junk.db"), "junk.db")
    assert_one_line_error(run_cli("merge-stores", a, a), str(a), "OUT")


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _count(db, table):
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_source_is_only_read(stores, tmp_path):
    """A job store as `copy_store` writes it (rollback journal): merged, the file is byte for byte
    what it was (it is opened read-only: no WAL switch, no version stamp)."""
    a, _ = stores
    job = tmp_path / "job.db"
    shutil.copy(a, job)
    with sqlite3.connect(job) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    before = _digest(job)
    proc = run_cli("merge-stores", tmp_path / "out.db", job, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] == 2
    assert _digest(job) == before
    assert _count(tmp_path / "out.db", "predictions") == _count(job, "predictions") > 0


def test_a_source_of_another_schema_is_refused_and_its_triggers_never_fire(tmp_path):
    """A store at another schema version, holding a trigger that empties its predictions and metrics
    on any insert, is refused in one line, and the file is left as it was."""
    other = tmp_path / "v5.db"
    with sqlite3.connect(other) as conn:
        conn.executescript(MAIN.read_text())
        conn.executescript("""
            CREATE TRIGGER wipe AFTER INSERT ON challenge_verified BEGIN
                DELETE FROM predictions; DELETE FROM metrics; END;
            PRAGMA user_version=5;""")
    before, predictions = _digest(other), _count(other, "predictions")
    assert predictions > 0
    out = tmp_path / "out.db"
    assert_one_line_error(run_cli("merge-stores", out, other), str(other), "version 5", "another bgbench")
    assert _digest(other) == before and _count(other, "predictions") == predictions
    assert not out.exists()


def test_a_store_from_another_bgbench_is_refused_and_keeps_its_version(stores, tmp_path):
    """A store at a schema version above this bgbench's, with a column this one does not know: a
    merge refuses it in one line, and so does any command that opens it, which leaves its version
    as it was."""
    a, _ = stores
    newer = tmp_path / "newer.db"
    shutil.copy(a, newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("ALTER TABLE runs ADD COLUMN lineage TEXT")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    before = _digest(newer)
    assert_one_line_error(run_cli("merge-stores", tmp_path / "out.db", newer), str(newer), "another bgbench")
    assert _digest(newer) == before
    assert_one_line_error(run_cli("runs", "--db", newer), str(newer), "another bgbench")
    with sqlite3.connect(newer) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


def _merge_at_once(out, source, ready):
    from bgbench.store import Store
    from bgbench.store.merge import merge_store
    with Store(out) as store:
        ready.wait(timeout=60)
        merge_store(store, source)


def test_two_merges_of_one_store_at_once_add_each_run_once(stores, tmp_path):
    """Two processes merging the same store into one OUT at the same moment: which runs OUT holds
    is read inside the write transaction, so the second finds the first's runs (three rounds)."""
    a, _ = stores
    fork = multiprocessing.get_context("fork")
    for round_ in range(3):
        out = tmp_path / f"out{round_}.db"
        ready = fork.Barrier(2)
        jobs = [fork.Process(target=_merge_at_once, args=(out, a, ready)) for _ in range(2)]
        for job in jobs:
            job.start()
        for job in jobs:
            job.join(120)
        assert [job.exitcode for job in jobs] == [0, 0]
        assert [(k, m) for _, k, m, _ in _runs(out)] == [("eval", "timm:test_resnet"),
                                                        ("challenge", "timm:test_resnet")]
        assert _count(out, "predictions") == _count(a, "predictions")


def test_a_table_of_odd_identifiers_is_copied(stores, tmp_path):
    """A source's own table whose name and column names hold quotes, `)`, `;` and `--` is copied
    with its rows like any other (identifiers are quoted)."""
    a, _ = stores
    src = tmp_path / "odd.db"
    shutil.copy(a, src)
    with sqlite3.connect(src) as conn:
        conn.execute('CREATE TABLE "odd""notes" (run_id INTEGER, "a)b" TEXT, "c;d" TEXT, "e--f" TEXT)')
        conn.execute('INSERT INTO "odd""notes" VALUES (1, \'x\', \'y\', \'z\')')
    out = tmp_path / "out.db"
    proc = run_cli("merge-stores", out, src)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(out) as conn:
        assert conn.execute('SELECT * FROM "odd""notes"').fetchall() == [(1, "x", "y", "z")]


def _damaged_copy(store, path):
    """A copy of `store` with garbage over the first pages of its runs, metrics and predictions
    tables: the file opens (its header and schema are whole), reading those tables fails."""
    shutil.copy(store, path)
    with sqlite3.connect(path) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = [r for (r,) in conn.execute("SELECT rootpage FROM sqlite_master WHERE type='table' "
                                            "AND name IN ('runs', 'metrics', 'predictions')")]
    with open(path, "r+b") as f:
        for root in roots:
            f.seek((root - 1) * page)
            f.write(b"\xa5" * page)
    return path


@pytest.mark.parametrize("command", [
    ["runs"], ["leaderboard"], ["export", "1", "--out", "{tmp}/p.csv"], ["report", "--out", "{tmp}/report"],
    ["merge-stores", "{tmp}/out.db", "{db}"], ["merge-stores", "{db}", "{a}"],
], ids=lambda c: " ".join(c[:2]).replace("{", "").replace("}", "").replace("/", "_"))
def test_a_damaged_store_is_one_line(stores, tmp_path, command):
    """A store with garbage in the middle ('database disk image is malformed'), read by any command
    (as --db, a merge's source or its OUT): one line naming it, not a traceback."""
    a, _ = stores
    db = _damaged_copy(a, tmp_path / "damaged.db")
    args = [c.format(tmp=tmp_path, db=db, a=a) for c in command]
    if command[0] != "merge-stores":
        args += ["--db", db]
    assert_one_line_error(run_cli(*args), str(db), "malformed")


def test_a_damaged_store_read_outside_a_with_block_is_one_line_too(monkeypatch):
    """The CLI's edge: SQLite's damage error from a store no `with Store(...)` names (the demo's)
    is one line; SQLite's other errors (a lock, bgbench's own SQL) keep their traceback."""
    import bgbench.cli.runs

    def damaged(args):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(bgbench.cli.runs, "run", damaged)
    assert_one_line_error(run_cli("runs"), "malformed", "damaged")

    def locked(args):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(bgbench.cli.runs, "run", locked)
    with pytest.raises(sqlite3.OperationalError):
        run_cli("runs")
