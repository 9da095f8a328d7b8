"""Every row of two bgbench stores, compared: the check that a change of how bgbench computes (its
feed, its template) left every stored number as it was.

    python benchmarks/same_stores.py BEFORE.sqlite AFTER.sqlite [--roots BEFORE_DIR AFTER_DIR]

Runs are matched in id order (the same study run twice makes them in the same order). `--roots`:
the two runs' output folders, where they differ (the demo in two folders): every text that names
one is read with the other's name, and the hashes of files that record where they were written (a
checkpoint's sha256, the feature cache key made of it) are left out. What says when or how fast a
run went is left out: `created`, `finished`, the config's runtime record
(`seconds`, `pixels`: images read from the cache, and the versions). Every other column of every
table, the config's other keys and each run's outputs, is compared exactly; the first difference
of each table is printed. Exit status 0 when both stores hold the same rows.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Dict, List

#: Config keys that record how a run went, not what it computed.
RUNTIME_KEYS = {"seconds", "pixels", "torch", "bgbench", "started", "elapsed", "host", "world"}
#: Columns of `runs` that record when.
WHEN = {"created", "finished", "version"}


def _tables(db: sqlite3.Connection) -> List[str]:
    return [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                                     "ORDER BY name")]


def _config(text: str) -> dict:
    config = json.loads(text or "{}")
    return {k: v for k, v in config.items() if k not in RUNTIME_KEYS}


ROOTS: List[str] = []  # (before, after) output folders, when given


#: With `--roots`: keys whose values hash a file that records its own path.
PATH_HASHES = ("sha256", "feature_cache_key")


def _same_root(value):
    if isinstance(value, str) and len(ROOTS) == 2:
        value = value.replace(ROOTS[1], ROOTS[0])
        if value[:1] in "{[":
            try:
                return json.dumps(_unhashed(json.loads(value)), sort_keys=True)
            except ValueError:
                pass
    return value


def _unhashed(value):
    """`value` without the keys of `PATH_HASHES` and the runtime `seconds`, at any depth."""
    if isinstance(value, dict):
        return {k: _unhashed(v) for k, v in value.items()
                if k != "seconds" and not any(h in k for h in PATH_HASHES)}
    if isinstance(value, list):
        return [_unhashed(v) for v in value]
    return value


def _runs(db: sqlite3.Connection) -> List[dict]:
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY id")]
    db.row_factory = None
    for r in rows:
        for k in WHEN:
            r.pop(k, None)
        r.update({k: _same_root(v) for k, v in r.items()})
        if len(ROOTS) == 2:
            r.pop("checkpoint_sha256", None)
        r["config"] = _unhashed(_config(r["config"]))
    return rows


def _rows(db: sqlite3.Connection, table: str, runs: Dict[int, int]) -> List[tuple]:
    """The table's rows, run ids replaced by the run's position, sorted."""
    cols = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
    out = []
    for row in db.execute(f"SELECT * FROM {table}"):
        row = [_same_root(v) for v in row]
        if "run_id" in cols:
            k = cols.index("run_id")
            row[k] = runs.get(row[k], row[k])
        out.append(tuple(row))
    return sorted(out, key=repr)


def compare(a_path: str, b_path: str) -> List[str]:
    a, b = sqlite3.connect(a_path), sqlite3.connect(b_path)
    problems = []
    runs_a, runs_b = _runs(a), _runs(b)
    if len(runs_a) != len(runs_b):
        problems.append(f"runs: {len(runs_a)} against {len(runs_b)}")
        ida, idb = ra.pop("id"), rb.pop("id")
        if ra != rb:
            keys = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
            detail = keys
            if keys == ["config"]:
                detail = sorted(k for k in set(ra["config"]) | set(rb["config"])
                                if ra["config"].get(k) != rb["config"].get(k))
            problems.append(f"run {ida}/{idb} ({ra.get('kind')}): differs in {detail}")
    pos_a = {r[0]: k for k, r in enumerate(a.execute("SELECT id FROM runs ORDER BY id"))}
    pos_b = {r[0]: k for k, r in enumerate(b.execute("SELECT id FROM runs ORDER BY id"))}
    tables_a, tables_b = set(_tables(a)) - {"runs", "sqlite_sequence"}, set(_tables(b)) - {"runs", "sqlite_sequence"}
    if tables_a != tables_b:
        problems.append(f"tables: only before {sorted(tables_a - tables_b)}, only after {sorted(tables_b - tables_a)}")
    for table in sorted(tables_a & tables_b):
        ra, rb = _rows(a, table, pos_a), _rows(b, table, pos_b)
        if ra != rb:
            first = next((x, y) for x, y in zip(ra + [None] * len(rb), rb + [None] * len(ra)) if x != y)
            problems.append(f"{table}: {len(ra)} rows against {len(rb)}; first difference {first[0]} / {first[1]}")
        else:
            print(f"{table}: {len(ra)} rows, the same", file=sys.stderr)
    return problems


def main(argv: List[str]) -> int:
    if "--roots" in argv:
        k = argv.index("--roots")
        ROOTS[:] = [str(Path(x).resolve()) for x in argv[k + 1:k + 3]]
        argv = argv[:k] + argv[k + 3:]
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    problems = compare(*argv)
    for p in problems:
        print(p)
    print("the same" if not problems else f"{len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
