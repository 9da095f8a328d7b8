"""The leaderboard is data: measured rows come from the store, reported rows from the papers.

Models are ranked within one dataset and one protocol only, a dataset being a data fingerprint (two
copies of the same data at different paths are one dataset) and a protocol the reference settings
a run recorded (`bgbench.protocols`; runs without one form their own group), by challenge accuracy; rows without a challenge
run are ranked apart by MIXED-RAND accuracy (see KEYS). The published rows (IN-9) sit beside measured runs
on the IN-9 classes only, never in another dataset's ranking. Measured and reported numbers are
never mixed in one row; every measured row carries its provenance (precision, checkpoint sha256,
data fingerprint, bgbench version), and an exact (fp32) run is always the one shown where there is one.
"""
from __future__ import annotations

import csv
import io
import json
from importlib.resources import files
from typing import Dict, List, Optional, Tuple

from ..classes import IN9_FOLDERS
from ..console import aligned
from ..models.labels import run_model_label
from ..evaluation.precision_flag import EXACT
from ..store import Store
from .context import run_precision

#: Ranking keys, in the order their blocks are shown. The Backgrounds Challenge board ranks by
#: challenge accuracy; a model without a challenge run is ranked apart, by MIXED-RAND accuracy
#: (the paper's accuracy without background help), never by ORIGINAL accuracy, which rewards
#: leaning on the background. Rows ranked on different keys never share one ranking.
KEYS = ("challenge", "mixed_rand")
KEY_NAMES = {"challenge": "challenge accuracy", "mixed_rand": "MIXED-RAND accuracy"}
RANK_COLUMNS = {k: f"rank_by_{k}" for k in KEYS}
COLUMNS = ("dataset", *RANK_COLUMNS.values(), "model", "source", "challenge", "clean", "original", "mixed_same",
           "mixed_rand", "bg_gap", "precision", "checkpoint_sha256", "data_fingerprint", "version", "data", "protocol",
           "reference")
PERCENT = ("challenge", "clean", "original", "mixed_same", "mixed_rand", "bg_gap")
PROVENANCE = ("precision", "checkpoint_sha256", "data_fingerprint", "version", "data", "reference")
#: What each block shows after its rank: its key first, the BG-Gap beside MIXED-RAND.
SHOWN = {"challenge": ("challenge", "clean", "original", "mixed_same", "mixed_rand", "bg_gap"),
         "mixed_rand": ("mixed_rand", "bg_gap", "original", "mixed_same"),
         None: ("original", "mixed_same")}
#: The stored metric (name, variant) each number column shows, by the kind of run it comes from.
METRIC_OF = {"challenge": {"challenge": ("challenge_accuracy", ""), "clean": ("clean_accuracy", "")},
             "eval": {**{v: ("accuracy", v) for v in ("original", "mixed_same", "mixed_rand")}, "bg_gap": ("bg_gap", "")}}
FORMATS = ("table", "md", "csv", "json", "html")
PUBLISHED = "IN-9 (published)"


def reported_rows() -> List[dict]:
    return [{**r, "source": "reported", "data": PUBLISHED}
            for r in json.loads(files("bgbench").joinpath("resources/reported.json").read_text())["rows"]]


def measured_rows(store: Store) -> List[dict]:
    """One row per (model, weights, dataset, protocol): its newest finished exact (fp32) challenge and
    eval runs, or the newest at another precision where there is no exact one (the row's precision
    column says so)."""
    chosen: Dict[tuple, Dict[str, object]] = {}
    for kind in ("eval", "challenge"):
        for run in (r for r in store.runs(kind) if r["status"] == "done"):
            weights = run["checkpoint_sha256"] or run["spec"]  # a random init is identified by its spec
            protocol = json.loads(run["config"]).get("protocol")
            slot = chosen.setdefault((run["model"], weights, run["data_fingerprint"], protocol), {})
            held = slot.get(kind)
            if held is None or run_precision(run) == EXACT or run_precision(held) != EXACT:
                slot[kind] = run
    return [_row(store, runs, key[3]) for key, runs in chosen.items()]


def _row(store: Store, runs: Dict[str, object], protocol: Optional[str]) -> dict:
    """A measured row from its chosen eval and challenge runs."""
    first = next(iter(runs.values()))
    newest = max(runs.values(), key=lambda r: r["id"])
    reduced = [f"{p} ({kind})" for kind, p in ((k, run_precision(r)) for k, r in runs.items()) if p != EXACT]
    row = {"model": first["model"], "model_label": run_model_label(first), "source": "measured",
           "checkpoint_sha256": first["checkpoint_sha256"], "data_fingerprint": first["data_fingerprint"],
           "protocol": protocol, "run_ids": sorted(r["id"] for r in runs.values()),
           "precision": "; ".join(reduced) or EXACT, "data": newest["data_root"], "version": newest["version"],
           "in9": any(tuple(json.loads(r["config"]).get("classes") or ()) == IN9_FOLDERS for r in runs.values())}
    for kind, run in runs.items():
        metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run["id"])}
        row.update({column: metrics.get(key) for column, key in METRIC_OF[kind].items()})
    return row


def ranking_key(row: dict) -> Optional[str]:
    """The key a row is ranked by: challenge accuracy if it has one, else MIXED-RAND accuracy, else none."""
    return next((k for k in KEYS if row.get(k) is not None), None)


def _rank(rows: List[dict]) -> List[dict]:
    """One dataset's rows: a ranking per key (best first, ties by model name), then the unranked."""
    out = []
    for key in (*KEYS, None):
        block = sorted((r for r in rows if ranking_key(r) == key),
                       key=lambda r: (-r[key] if key else 0, str(r["model"])))
        for i, r in enumerate(block if key else [], 1):
            r[RANK_COLUMNS[key]] = i
        out += block
    return out


def blocks(rows: List[dict]) -> List[Tuple[str, Optional[str], List[dict]]]:
    """(dataset, ranking key or None, rows) in the order `leaderboard` returns them."""
    out: List[Tuple[str, Optional[str], List[dict]]] = []
    for r in rows:
        key = ranking_key(r)
        if not out or out[-1][0] != r["dataset"] or out[-1][1] != key:
            out.append((r["dataset"], key, []))
        out[-1][2].append(r)
    return out


#: The heading that names a block's ranking key.
TITLES = {"challenge": "ranked by challenge accuracy (share of foregrounds never fooled)",
          "mixed_rand": "no complete challenge run (a --sample run only estimates it): ranked by MIXED-RAND accuracy "
                        "(accuracy without background help), BG-Gap beside it",
          None: "not ranked: no complete challenge run and no MIXED-RAND accuracy"}


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
    groups = {names[key]: [{**r, "dataset": names[key]} for r in rows] for key, rows in groups.items()}
    if include_reported:
        in9 = [name for name, rows in groups.items() if any(r.get("in9") for r in rows)]
        for name in in9 or [PUBLISHED]:
            groups.setdefault(name, []).extend({**r, "dataset": name} for r in reported_rows())
    return [{**{c: r.get(c) for c in COLUMNS}, "model_label": r.get("model_label") or r.get("model"),
             "run_ids": r.get("run_ids", [])}
            for name in sorted(groups, key=lambda n: (n == PUBLISHED, n)) for r in _rank(groups[name])]


def _cell(col: str, value) -> str:
    if value is None:
        return "-"
    if col in PERCENT:
        return f"{100 * value:.1f}%"
    if col == "checkpoint_sha256":
        return value[:12]
    return str(value)


def render(rows: List[dict], fmt: str = "table") -> str:
    """`rows` as text. csv and json carry one rank column per key (the key is in the header);
    table and md show one block per dataset and key, headed by the key's name."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    if fmt == "json":
        return json.dumps(rows, indent=1)
    if fmt == "html":  # one sortable page, drawn by the layer above (render.leaderboard_html)
        raise ValueError("the html leaderboard is rendered by bgbench.reporting.render.leaderboard_html")
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    return "\n\n".join(_text_block(dataset, key, block, fmt) for dataset, key, block in blocks(rows))


def _text_block(dataset: str, key: Optional[str], rows: List[dict], fmt: str) -> str:
    """One block as text: its rank column (named after the key), the model, its numbers, provenance."""
    columns = [*([RANK_COLUMNS[key]] if key else []), "model", "source", *SHOWN[key], *PROVENANCE]
    cells = [[_cell(c, (r.get("model_label") or r[c]) if c == "model" else r[c]) for c in columns] for r in rows]
    if fmt == "md":
        head = f"### {dataset}: {TITLES[key]}\n\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)
        body = "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
        return head + "\n" + body
    return "\n".join([f"dataset: {dataset}, {TITLES[key]}", *aligned([columns, *cells])])
