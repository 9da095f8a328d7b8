"""`bgbench runs`: the recorded runs, so that a run can be named to later commands."""
from __future__ import annotations

import argparse
import json

from .common import add_db_arg

#: The numbers shown per run kind in the listing: the first one the run has.
HEADLINE = {"eval": [("bg_gap", ""), ("accuracy", "original")], "challenge": [("challenge_accuracy", "")],
            "train": [("train_accuracy", "")]}


def register(sub) -> None:
    p = sub.add_parser("runs", help="list recorded runs (id, kind, model, data, status)")
    p.add_argument("--kind", help="only runs of this kind (eval, challenge, train, build, ...)")
    p.add_argument("--model", help="only runs of this model string")
    p.add_argument("--json", action="store_true", help="print the runs as one JSON document")
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..store import Store
    with Store(args.db) as store:
        rows = [r for r in store.runs(args.kind) if args.model is None or r["model"] == args.model]
        listing = [_describe(store, r) for r in rows]
        where = store.path
    if args.json:
        print(json.dumps(listing, indent=1))
        return 0
    if not listing:
        print(f"no runs recorded in {where}" + (f" of kind {args.kind}" if args.kind else ""))
        return 0
    cols = ("id", "kind", "status", "created", "model", "data", "result")
    cells = [[str(r[c] if r[c] is not None else "-") for c in cols] for r in listing]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
    return 0


def _describe(store, r) -> dict:
    """A run as one flat record: provenance plus its headline number."""
    result = None
    if r["kind"] in HEADLINE:
        metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(r["id"])}
        found = [(k, metrics[k]) for k in HEADLINE[r["kind"]] if metrics.get(k) is not None]
        if found:
            (name, variant), value = found[0]
            result = f"{name}{f'[{variant}]' if variant else ''}={100 * value:.1f}%"
    elif r["outputs"]:
        outputs = json.loads(r["outputs"])
        result = ", ".join(f"{k}={outputs[k]}" for k in ("built", "rejected") if k in outputs) or None
    return {"id": r["id"], "kind": r["kind"], "status": r["status"], "created": r["created"], "model": r["model"],
            "data": r["data_root"], "data_fingerprint": r["data_fingerprint"],
            "checkpoint_sha256": r["checkpoint_sha256"], "version": r["version"], "result": result}
