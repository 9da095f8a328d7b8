"""The leaderboard is data: measured rows come from the store, reported rows from the papers.

Models are ranked within one dataset and one protocol only, a dataset being a data fingerprint
(two copies of the same data at different paths are one dataset) and a protocol the reference
settings a run recorded (`bgbench.protocols`; runs without one form their own group). The published rows (IN-9) sit beside measured runs
on the IN-9 classes only, never in another dataset's ranking. Measured and reported numbers are
never mixed in one row; every measured row carries its provenance (checkpoint sha256, data
fingerprint, bgbench version).
"""
from __future__ import annotations

import csv
import io
import json
from importlib.resources import files
from typing import Dict, List, Optional

from ..classes import IN9_FOLDERS
from ..store import Store

COLUMNS = ("dataset", "rank", "model", "source", "challenge", "clean", "original", "mixed_same", "mixed_rand",
           "bg_gap", "checkpoint_sha256", "data_fingerprint", "version", "data", "protocol", "reference")
PERCENT = ("challenge", "clean", "original", "mixed_same", "mixed_rand", "bg_gap")
FORMATS = ("table", "md", "csv", "json", "html")
PUBLISHED = "IN-9 (published)"


def reported_rows() -> List[dict]:
    raw = json.loads(files("bgbench").joinpath("resources/reported.json").read_text())
    return [{**r, "source": "reported", "data": PUBLISHED} for r in raw["rows"]]


def measured_rows(store: Store) -> List[dict]:
    """One row per (model, weights, dataset, protocol): its newest finished challenge and eval runs."""
    rows: Dict[tuple, dict] = {}
    for kind in ("eval", "challenge"):
        for run in store.runs(kind):
            if run["status"] != "done":
                continue
            config = json.loads(run["config"])
            weights = run["checkpoint_sha256"] or run["spec"]  # a random init is identified by its spec
            key = (run["model"], weights, run["data_fingerprint"], config.get("protocol"))
            row = rows.setdefault(key, {"model": run["model"], "source": "measured",
                                        "checkpoint_sha256": run["checkpoint_sha256"],
                                        "data_fingerprint": run["data_fingerprint"], "protocol": config.get("protocol")})
            row["data"] = run["data_root"]
            row["version"] = run["version"]
            row["in9"] = tuple(config.get("classes") or ()) == IN9_FOLDERS
            metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run["id"])}
            if kind == "challenge":
                row["challenge"] = metrics.get(("challenge_accuracy", ""))
                row["clean"] = metrics.get(("clean_accuracy", ""))
            else:
                for v in ("original", "mixed_same", "mixed_rand"):
                    if ("accuracy", v) in metrics:
                        row[v] = metrics[("accuracy", v)]
                if ("bg_gap", "") in metrics:
                    row["bg_gap"] = metrics[("bg_gap", "")]
    return list(rows.values())


def _rank(rows: List[dict]) -> List[dict]:
    """By challenge accuracy; rows without one follow, by original accuracy."""
    rows = sorted(rows, key=lambda r: (r.get("challenge") is None, -(r.get("challenge") or 0),
                                       -(r.get("original") or 0)))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return rows


def leaderboard(store: Optional[Store], include_reported: bool = True) -> List[dict]:
    """Rows grouped by dataset (data fingerprint) and protocol, and ranked within each group.

    The published rows join every group on the IN-9 classes, or stand alone when there is none.
    """
    groups: Dict[tuple, List[dict]] = {}
    names: Dict[tuple, str] = {}  # (fingerprint, protocol) -> display name (newest path, fingerprint, protocol)
    for r in measured_rows(store) if store is not None else []:
        key = (r["data_fingerprint"], r.get("protocol"))
        names[key] = f"{r['data']} [{r['data_fingerprint']}], " + (f"protocol {key[1]}" if key[1] else "no protocol")
        groups.setdefault(key, []).append(r)
    groups = {names[key]: rows for key, rows in groups.items()}
    for name, rows in groups.items():
        for r in rows:
            r["dataset"] = name
    if include_reported:
        in9 = [name for name, rows in groups.items() if any(r.get("in9") for r in rows)]
        for name in in9 or [PUBLISHED]:
            groups.setdefault(name, []).extend({**r, "dataset": name} for r in reported_rows())
    out = []
    for name in sorted(groups, key=lambda n: (n == PUBLISHED, n)):
        out += _rank(groups[name])
    return [{c: r.get(c) for c in COLUMNS} for r in out]


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
    if fmt == "html":  # one sortable page, drawn by the layer above (render.leaderboard_html)
        raise ValueError("the html leaderboard is rendered by bgbench.reporting.render.leaderboard_html")
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    columns = [c for c in COLUMNS if c != "dataset"]
    blocks = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        cells = [[_cell(c, r[c]) for c in columns] for r in rows if r["dataset"] == dataset]
        if fmt == "md":
            head = f"### {dataset}\n\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)
            body = "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
            blocks.append(head + "\n" + body)
        else:
            widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
            lines = [f"dataset: {dataset}", "  ".join(c.ljust(w) for c, w in zip(columns, widths))]
            lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
