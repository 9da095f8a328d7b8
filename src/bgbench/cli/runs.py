"""`bgbench runs`: the recorded runs, so that a run can be named to later commands."""
from __future__ import annotations

import argparse
import json
from typing import Dict, List, Optional, Tuple

from .common import add_db_arg, add_output_args, add_run_filters, emit, open_store

#: The headline of each run kind: the first of these metrics (name, variant, format) the run has.
#: "pct" shows a share as a percentage; "num" a plain number.
HEADLINE: Dict[str, List[Tuple[str, str, str]]] = {
    "eval": [("bg_gap", "", "pct"), ("accuracy", "original", "pct")],
    "challenge": [("challenge_accuracy", "", "pct")],
    "train": [("train_accuracy", "", "pct")],
    "probe_noise": [("rfs", "", "num")],
    "probe_saliency": [("saliency_precision", "", "num")],
    "probe_features": [("features_bg_share", "", "num")],
    "probe_ablate": [("ablation_acc_drop", "bg", "pct"), ("ablation_acc_drop", "fg", "pct")],
}
#: Kinds whose headline is a count from their outputs rather than a metric.
OUTPUT_HEADLINE: Dict[str, Tuple[str, ...]] = {"build": ("built", "rejected"),
                                               "edit": ("images", "edited", "rejected")}
#: The kinds bgbench records (named in --kind's help; other kinds are listed too).
KINDS = ("eval", "challenge", "train", "build", "edit", "probe_noise", "probe_saliency", "probe_features",
         "probe_ablate", "probe_attribution")


def register(sub) -> None:
    p = sub.add_parser("runs", help="list recorded runs (id, kind, status, model and weights, data, headline)")
    add_run_filters(p, KINDS)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args, create=False) as store:
        rows = [r for r in store.runs(args.kind) if args.model is None or r["model"] == args.model]
        listing = [describe(store, r) for r in rows]
        where = store.path
    if not listing:
        emit(args, [], f"no runs recorded in {where}" + (f" of kind {args.kind}" if args.kind else ""))
        return 0
    cols = ("id", "kind", "status", "created", "model", "data", "result")
    cells = [[str(r["model_label"] if c == "model" else r[c] if r[c] is not None else "-") for c in cols]
             for r in listing]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    emit(args, listing, "\n".join(lines))
    return 0


def headline(kind: str, metrics: Dict[Tuple[str, str], Optional[float]], outputs: Optional[dict]) -> Optional[str]:
    """The one number that says how a run came out, e.g. `bg_gap=78.0%`, `rfs=-0.781`, `built=36, rejected=0`.

    A kind without an entry shows its first metric, so a new kind is never blank.
    """
    for name, variant, fmt in HEADLINE.get(kind, []):
        value = metrics.get((name, variant))
        if value is not None:
            return _show(name, variant, value, fmt)
    if kind in OUTPUT_HEADLINE and outputs:
        shown = [f"{k}={outputs[k]}" for k in OUTPUT_HEADLINE[kind] if k in outputs]
        if shown:
            return ", ".join(shown)
    if kind in HEADLINE:  # recorded, but with no value (e.g. no Grad-CAM had any mass): say so
        name, variant, _ = HEADLINE[kind][0]
        return f"{name}{f'[{variant}]' if variant else ''}=–"
    for (name, variant), value in metrics.items():
        if value is not None:
            return _show(name, variant, value, "num")
    return None


def _show(name: str, variant: str, value: float, fmt: str) -> str:
    shown = f"{100 * value:.1f}%" if fmt == "pct" else f"{value:.3g}"
    return f"{name}{f'[{variant}]' if variant else ''}={shown}"


def describe(store, r) -> dict:
    """A run as one flat record: provenance plus its headline number."""
    from ..recording import run_model_label
    metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(r["id"])}
    outputs = json.loads(r["outputs"]) if r["outputs"] else None
    return {"id": r["id"], "kind": r["kind"], "status": r["status"], "created": r["created"], "model": r["model"],
            "model_label": run_model_label(r), "data": r["data_root"], "data_fingerprint": r["data_fingerprint"],
            "checkpoint_sha256": r["checkpoint_sha256"], "version": r["version"],
            "result": headline(r["kind"], metrics, outputs)}
