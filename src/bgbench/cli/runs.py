"""`bgbench runs`: the recorded runs, so that a run can be named to later commands."""
from __future__ import annotations

import argparse
import json
from typing import Dict, Optional, Tuple

from ..console import aligned
from ..measures.registry import Command, Headline, list_measures, measure_of_kind

from .arguments import add_output_args, add_run_filters

from .output import emit, open_store

#: Headlines of the run kinds that are not measures (a measure's come from its declaration).
TRAIN_HEADLINE = Headline("train_accuracy", label="training accuracy", percent=True)
#: Kinds whose headline is a count from their outputs rather than a metric.
OUTPUT_HEADLINE: Dict[str, Tuple[str, ...]] = {"build": ("built", "rejected"),
                                               "edit": ("images", "edited", "rejected")}


def recorded_kinds() -> Tuple[str, ...]:
    """The kinds bgbench records (named in --kind's help; other kinds are listed too)."""
    own = [m.kind for m in list_measures(Command.OWN)]  # the measures with a command of their own first
    return (*own, "train", "build", "edit", *(m.kind for m in list_measures() if m.kind and m.kind not in own))


def register(sub) -> None:
    p = sub.add_parser("runs", help="list recorded runs (id, kind, status, model and weights, data, headline)")
    add_run_filters(p, recorded_kinds())
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    with open_store(args, create=False) as store:
        rows = [r for r in store.runs(args.kind) if args.model is None or r["model"] == args.model]
        listing = [describe(store, r) for r in rows]
        where = store.path
    if not listing:
        return emit(args, [], f"no runs recorded in {where}" + (f" of kind {args.kind}" if args.kind else ""))
    cols = ("id", "kind", "status", "created", "model", "data", "result")
    cells = [[str(r["model_label"] if c == "model" else r[c] if r[c] is not None else "-") for c in cols]
             for r in listing]
    return emit(args, listing, "\n".join(aligned([cols, *cells])))


def headline(kind: str, metrics: Dict[Tuple[str, str], Optional[float]], outputs: Optional[dict]) -> Optional[str]:
    """The one number that says how a run came out, e.g. `bg_gap=78.0%`, `rfs=-0.781`, `built=36, rejected=0`:
    a measure's declared headline, a count for builds and edits; a kind with none shows its first
    metric, so a new kind is never blank.
    """
    measure = measure_of_kind(kind)
    if measure is not None and measure.headlines:
        return measure.headline(metrics)
    if kind == "train" and metrics.get((TRAIN_HEADLINE.metric, "")) is not None:
        return TRAIN_HEADLINE.show(metrics[(TRAIN_HEADLINE.metric, "")])
    if kind in OUTPUT_HEADLINE and outputs:
        shown = [f"{k}={outputs[k]}" for k in OUTPUT_HEADLINE[kind] if k in outputs]
        if shown:
            return ", ".join(shown)
    return next((Headline(name, variant).show(value) for (name, variant), value in metrics.items()
                 if value is not None), None)


def describe(store, r) -> dict:
    """A run as one flat record: provenance plus its headline number."""
    from ..models.labels import run_model_label
    metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(r["id"])}
    outputs = json.loads(r["outputs"]) if r["outputs"] else None
    precision = json.loads(r["config"] or "{}").get("precision")
    result = headline(r["kind"], metrics, outputs)
    if result is not None and precision not in (None, "fp32"):  # a reduced-precision number says so
        result += f" [{precision}]"
    return {"id": r["id"], "kind": r["kind"], "status": r["status"], "created": r["created"], "model": r["model"],
            "model_label": run_model_label(r), "data": r["data_root"], "data_fingerprint": r["data_fingerprint"],
            "checkpoint_sha256": r["checkpoint_sha256"], "version": r["version"],
            "precision": precision, "result": result}
