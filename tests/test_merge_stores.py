"""`bgbench merge-stores OUT STORE...`: every finished run of the stores, with all its rows, lands in
OUT once, however often a store is merged and whatever runs two stores share; counted here with
sqlite3, not with bgbench's own readers."""
import json
import shutil
import sqlite3

import pytest

from conftest import assert_one_line_error, run_cli


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
