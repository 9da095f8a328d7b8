"""A store bgbench wrote reads back: today's summaries of its rows give the metrics it holds, it
takes new runs, and processes opening a new store together all succeed."""
import multiprocessing
import sqlite3
import sys
from pathlib import Path

import pytest

from bgbench.store import Store


MAIN = Path(__file__).with_name("data") / "store_main.sql"


@pytest.fixture
def store_from_main(tmp_path):
    """A store with a run of every measure (tests/data/store_main.sql)."""
    db = tmp_path / "main.db"
    con = sqlite3.connect(db)
    con.executescript(MAIN.read_text(encoding="utf-8"))
    con.close()
    return db


def test_every_stored_measure_reads_back_its_metrics(store_from_main):
    """Each probe's summary, recomputed by today's code from the rows the store holds, gives
    the metrics it holds; eval's accuracies come back from its predictions."""
    from bgbench.measures.registry import PROBE_PREFIX, list_measures
    from bgbench.probing.tables import stored_table
    with Store(store_from_main, create=False) as store:
        kinds = {r["kind"] for r in store.runs()}
        probes = [m for m in list_measures("probe") if m.kind in kinds]
        # every probe kind the store holds is one today's registry reads back (probes
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


def test_a_written_store_takes_new_runs_and_lists_headlines(store_from_main, tmp_path):
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
        with Store(path, create=False) as store:
            assert len(store.conn.execute("SELECT id FROM runs").fetchall()) == 4
