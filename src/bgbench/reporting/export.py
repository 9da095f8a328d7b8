"""The scorecard as files to publish beside a paper or a model, as timm's results/*.csv and
RobustBench's model_info/*.json are:

- `scorecard.csv`: one row per (model, dataset): the model, its architecture and weights' sha256,
  the dataset and its fingerprint, the test protocol, the precision its numbers were computed in
  ('fp32', the exact one, or each other precision with its measures), the class map (name and sha256), the
  normalization (mean, std and where they came from) and input size, the bgbench version,
  then each headline's value, interval and n (shares as fractions: 0.5 is 50%); empty where the
  model has no such number on that dataset;
- `model_info/<dataset>/<model>.json`: the same row as one JSON object per model and dataset, laid
  out as RobustBench's model_info entries (`model_info/<dataset>/<threat model>/<name>.json`, flat
  provenance fields: name, architecture, dataset, `reported` vs measured), each headline with its
  interval, direction, run and precision. Strict JSON: a missing number is null, never NaN.

The numbers are the scorecard's (`reporting.scorecard`): each the stored metric of the model's
newest exact run of its measure on that dataset (its newest run where it has no exact one).
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..data.owned import safe_name
from ..evaluation.metrics import finite_or_none
from ..version import __version__

SCORECARD_CSV = "scorecard.csv"
MODEL_INFO = "model_info"
#: The list of the files `bgbench export --scorecard` wrote into its folder (a rewrite removes those).
EXPORT_RECORD = "EXPORT_FILES.txt"
#: The columns of the CSV before the headlines'.
FIELDS = ("model", "model_string", "architecture", "weights_sha256", "dataset", "data_fingerprint", "protocol",
          "ten_crop", "precision", "class_map", "class_map_sha256", "norm_mean", "norm_std", "norm_source", "input_size", "resize",
          "bgbench_version")
#: The protocol's fields beyond the model and the data (`scorecard.shown_precision`, `scorecard.preprocessing`),
#: in both files.
PREPROCESSING = ("precision", "class_map", "class_map_sha256", "norm_mean", "norm_std", "norm_source", "input_size", "resize")
#: Each headline's columns: `<id>`, then `<id>:lo`, `<id>:hi`, `<id>:n`; its id is its scorecard key
#: without a trailing ':' ('eval:bg_gap', 'eval:accuracy:original', 'probe_noise:rfs').
PARTS = ("lo", "hi", "n")


def records(data: dict) -> List[dict]:
    """One record per (model, dataset) of the scorecard's data: provenance and the headlines
    measured there, in the scorecard's order."""
    return [{"name": row["label"], "model": subject["model"], "architecture": subject["architecture"],
             "weights_sha256": subject["weights_sha256"], "dataset": group["name"],
             "data_fingerprint": subject["data_fingerprint"], "data_root": subject["data_root"],
             "protocol": subject["protocol"], "ten_crop": subject["ten_crop"],
             **{k: subject.get(k) for k in PREPROCESSING}, "reported": False,
             "bgbench_version": __version__, "measured_with": subject["versions"],
             "headlines": {column["key"].rstrip(":"): _headline(column, e)
                           for column, e in zip(group["columns"], cells) if e is not None}}
            for row in data["rows"] for group, cells, subject in zip(data["groups"], row["cells"], row["subjects"])
            if subject is not None and any(e is not None for e in cells)]


def _headline(column: dict, e: dict) -> dict:
    """One headline of a record: its column's description and its cell's number (None for NaN)."""
    return {"title": column["title"], "description": column["description"],
            **{k: finite_or_none(None if e[k] is None else float(e[k])) for k in ("value", "lo", "hi")},
            "n": e["n"], "higher_is_better": column["higher"], "percent": column["percent"],
            "not_available": e.get("na"), "run": e["run"], "precision": e.get("precision")}


def _joined(v):
    """A list (a mean or std) as one CSV cell, its numbers separated by spaces: '0.5 0.5 0.5'."""
    return " ".join(repr(float(x)) for x in v) if isinstance(v, list) else v


def _cell(v) -> str:
    """A CSV cell: empty for a missing number, floats in full (they read back equal), booleans as
    JSON writes them."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def csv_text(entries: Sequence[dict]) -> str:
    """The CSV: one row per record, every headline any record has as four columns."""
    ids = list(dict.fromkeys(k for e in entries for k in e["headlines"]))
    header = [*FIELDS] + [c for k in ids for c in (k, *(f"{k}:{p}" for p in PARTS))]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    # the record's own fields, but for the first two: the row's name is the model's, its model string beside it
    writer.writerows([_cell(v) for v in (e["name"], e["model"], *[_joined(e[k]) for k in FIELDS[2:]],
                                          *[(e["headlines"].get(k) or {}).get(part) for k in ids
                                            for part in ("value", *PARTS)])] for e in entries)
    return buf.getvalue()


def write_scorecard(data: dict, folder: Path) -> Dict[str, object]:
    """Write `folder/scorecard.csv` and `folder/model_info/<dataset>/<model>.json`; returns what was
    written: paths relative to `folder`, the number of rows, and `of`: (row label, dataset key) ->
    its JSON's path."""
    entries = records(data)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SCORECARD_CSV).write_text(csv_text(entries), encoding="utf-8")
    names = [g["name"] for g in data["groups"]]
    folders = {g["name"]: safe_name(g["name"]) for g in data["groups"]}  # two datasets of one name: by fingerprint
    folders.update({(g["name"], g["key"]): safe_name(f"{g['name']}-{str(g['key'])[:12]}") for g in data["groups"]
                    if names.count(g["name"]) > 1})
    infos = []
    for e in entries:
        where = folders.get((e["dataset"], e["data_fingerprint"] or "-"), folders[e["dataset"]])
        rel = Path(MODEL_INFO) / where / f"{safe_name(e['name'])}.json"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps(e, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        infos.append(rel.as_posix())
    return {"csv": SCORECARD_CSV, "model_info": infos, "rows": len(entries),
            "of": {(e["name"], e["data_fingerprint"] or "-"): p for e, p in zip(entries, infos)}}


def export_scorecard(store, out: str | Path, run_ids: Optional[Sequence[int]] = None,
                     models: Optional[Sequence[str]] = None) -> dict:
    """Write the scorecard of the store's finished runs (or of `run_ids`, or of `models`) into the
    folder `out`: `scorecard.csv` and `model_info/`, staged aside and moved in whole; a rewrite
    removes only the files a previous export listed (EXPORT_FILES.txt). Returns what was written,
    with absolute paths."""
    from ..data.owned import StagedOutput, refuse_unsafe_out
    from ..errors import BgbenchError
    from .context import ReportContext, name_subjects, select_subjects
    from .scorecard import scorecard
    out = refuse_unsafe_out(Path(out))
    subjects = name_subjects(select_subjects(store, run_ids, models))
    staged = StagedOutput(out, EXPORT_RECORD, "export")
    try:
        data = scorecard(ReportContext(store=store, out=staged.open(), subjects=subjects, progress=False))
        if data is None:
            raise BgbenchError(f"no headline numbers to export in {store.path}: the chosen runs recorded none")
        written = write_scorecard(data, staged.stage)
        staged.commit()
    finally:
        staged.discard()
    return {"out": str(out), "csv": str(out / written["csv"]), "model_info": [str(out / p) for p in
                                                                           written["model_info"]],
            "rows": written["rows"], "models": len(data["rows"]), "datasets": len(data["groups"])}
