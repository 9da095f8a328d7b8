"""The leaderboard is data: measured rows come from the store, reported rows from the papers.

Measured and reported numbers are never mixed in one row; every measured row carries its
provenance (checkpoint sha256, data fingerprint, bgbench version).
"""
from __future__ import annotations

import csv
import io
import json
from importlib.resources import files
from typing import List, Optional

from .store import Store

COLUMNS = ("rank", "model", "source", "challenge", "clean", "original", "mixed_same", "mixed_rand", "bg_gap",
           "checkpoint_sha256", "data_fingerprint", "version", "data")
PERCENT = ("challenge", "clean", "original", "mixed_same", "mixed_rand", "bg_gap")
FORMATS = ("table", "md", "csv", "json")


def reported_rows() -> List[dict]:
    raw = json.loads(files("bgbench").joinpath("resources/reported.json").read_text())
    return [{**r, "source": "reported", "data": "IN-9 (published)"} for r in raw["rows"]]


def measured_rows(store: Store) -> List[dict]:
    """One row per (model, checkpoint, dataset): its newest finished challenge and eval runs."""
    rows = {}
    for kind in ("eval", "challenge"):
        for run in store.runs(kind):
            if run["status"] != "done":
                continue
            key = (run["model"], run["checkpoint_sha256"], run["data_root"])
            row = rows.setdefault(key, {"model": run["model"], "source": "measured",
                                        "checkpoint_sha256": run["checkpoint_sha256"], "data": run["data_root"]})
            row["version"] = run["version"]
            metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run["id"])}
            if kind == "challenge":
                row["challenge"] = metrics.get(("challenge_accuracy", ""))
                row["clean"] = metrics.get(("clean_accuracy", ""))
                row["data_fingerprint"] = run["data_fingerprint"]
            else:
                for v in ("original", "mixed_same", "mixed_rand"):
                    if ("accuracy", v) in metrics:
                        row[v] = metrics[("accuracy", v)]
                if ("bg_gap", "") in metrics:
                    row["bg_gap"] = metrics[("bg_gap", "")]
                row.setdefault("data_fingerprint", run["data_fingerprint"])
    return list(rows.values())


def leaderboard(store: Optional[Store], include_reported: bool = True) -> List[dict]:
    """Rows ranked by challenge accuracy (rows without one follow, by original accuracy)."""
    rows = (measured_rows(store) if store is not None else []) + (reported_rows() if include_reported else [])
    rows.sort(key=lambda r: (r.get("challenge") is None, -(r.get("challenge") or 0), -(r.get("original") or 0)))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return [{c: r.get(c) for c in COLUMNS} for r in rows]


def _cell(col: str, value) -> str:
    if value is None:
        return "-"
    if col in PERCENT:
        return f"{100 * value:.1f}%"
    if col == "checkpoint_sha256":
        return value[:12]
    return str(value)


def render(rows: List[dict], fmt: str = "table") -> str:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    if fmt == "json":
        return json.dumps(rows, indent=1)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    cells = [[_cell(c, r[c]) for c in COLUMNS] for r in rows]
    if fmt == "md":
        head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS)
        return head + "\n" + "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)
