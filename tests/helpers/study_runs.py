"""Two stores of one study compared as a user would: the scorecard (run ids aside), and every
finished run's metrics and per-image rows, read with sqlite3 and matched by what the run is (its
kind, model and data), not by its id."""
import sqlite3

#: The per-image tables a study's eval and challenge steps write.
ROW_TABLES = ("predictions", "challenge_fg", "challenge_row", "challenge_bg", "metrics")


def scorecard_cells(doc: dict) -> list:
    """`bgbench study --json`'s scorecard, without the run ids (which depend on merge order)."""
    return sorted((tuple(sorted((k, v) for k, v in r.items() if k != "run")) for r in doc["scorecard"]), key=repr)


def stored_runs(db) -> dict:
    """(kind, model, data fingerprint) -> {table: sorted rows without run_id} of every finished run."""
    out = {}
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        runs = conn.execute("SELECT id, kind, model, data_fingerprint FROM runs WHERE status IN ('done', 'sampled')")
        for run_id, kind, model, fingerprint in runs.fetchall():
            key = (kind, model, fingerprint)
            assert key not in out, f"{db}: two finished runs of {key}"
            out[key] = {}
            for table in ROW_TABLES:
                if table not in tables:
                    continue
                cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != "run_id"]
                out[key][table] = sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE run_id=?",
                                                      (run_id,)).fetchall(), key=repr)
    return out
